import { ZEndpointClass } from "@limitplane/enforcer/policy";
import type { z } from "zod";
import { type ChangeContext, parseChange } from "../change-context";
import type { ControlDeps } from "../deps";
import { AppError } from "../errors";
import { type ChangeReceipt, runPolicyChange } from "../policy/run-policy-change";
import { translateDbError } from "../prisma-errors";
import { auditView } from "../stored";
import {
  type EndpointClassRecord,
  endpointClassData,
  endpointClassLabel,
  endpointClassSelect,
  toEndpointClassRecord,
} from "./endpoint-class-record";

/** A new endpoint class (see `ZEndpointClass`). */
export type CreateEndpointClassOptions = z.input<typeof ZEndpointClass>;

export async function createEndpointClass(
  options: CreateEndpointClassOptions,
  context: ChangeContext,
  deps: ControlDeps,
): Promise<{ readonly endpointClass: EndpointClassRecord } & ChangeReceipt> {
  const { input, ctx } = parseChange(ZEndpointClass, options, context);
  return runPolicyChange(deps, ctx, {
    action: "endpoint-class.create",
    entityType: "endpoint-class",
    affectsSnapshot: true,
    touches: "core-and-costs",
    focus: { collection: "endpointClasses", id: input.name },
    async write(tx) {
      const existing = await tx.endpointClass.findUnique({
        where: { name: input.name },
        select: { name: true },
      });
      if (existing !== null) {
        throw new AppError(
          "CONFLICT",
          `${endpointClassLabel(input.name)} already exists; edit it instead.`,
          { fieldErrors: [{ path: "name", message: `"${input.name}" is already taken` }] },
        );
      }
      const row = await tx.endpointClass
        .create({
          data: { name: input.name, ...endpointClassData(input) },
          select: endpointClassSelect,
        })
        .catch((error: unknown) => {
          throw translateDbError(error, { entity: "Endpoint class", key: input.name });
        });
      const endpointClass = toEndpointClassRecord(row);
      return {
        entityId: endpointClass.name,
        customerId: null,
        before: null,
        after: auditView(endpointClass),
        value: { endpointClass },
      };
    },
  });
}
