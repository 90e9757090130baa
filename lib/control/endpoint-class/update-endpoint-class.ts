import { ZEndpointClass } from "@limitplane/enforcer/policy";
import { z } from "zod";
import { type ChangeContext, parseChange, ZExpectedVersion } from "../change-context";
import type { ControlDeps } from "../deps";
import { type ChangeReceipt, runPolicyChange } from "../policy/run-policy-change";
import { auditView } from "../stored";
import { versionedWrite } from "../versioned-write";
import {
  type EndpointClassRecord,
  endpointClassData,
  endpointClassEntity,
  endpointClassSelect,
  toEndpointClassRecord,
} from "./endpoint-class-record";

const shape = ZEndpointClass.shape;
const EDITABLE = [
  "displayName",
  "match",
  "cost",
  "limits",
  "anonymousLimit",
  "ceiling",
  "keyBy",
] as const;

/** Fields not given are left as they are; `limits` and `match` are replaced whole. */
export const ZUpdateEndpointClassOptions = z
  .strictObject({
    name: shape.name,
    expectedVersion: ZExpectedVersion,
    displayName: shape.displayName.unwrap().optional(),
    match: shape.match.unwrap().optional(),
    cost: shape.cost.unwrap().optional(),
    limits: shape.limits.unwrap().optional(),
    anonymousLimit: shape.anonymousLimit.unwrap().optional(),
    ceiling: shape.ceiling.unwrap().optional(),
    keyBy: shape.keyBy.unwrap().optional(),
  })
  .refine((options) => EDITABLE.some((field) => options[field] !== undefined), {
    error: `give at least one field to change: ${EDITABLE.join(", ")}`,
  });
export type UpdateEndpointClassOptions = z.input<typeof ZUpdateEndpointClassOptions>;

export async function updateEndpointClass(
  options: UpdateEndpointClassOptions,
  context: ChangeContext,
  deps: ControlDeps,
): Promise<{ readonly endpointClass: EndpointClassRecord } & ChangeReceipt> {
  const { input, ctx } = parseChange(ZUpdateEndpointClassOptions, options, context);
  return runPolicyChange(deps, ctx, {
    action: "endpoint-class.update",
    entityType: "endpoint-class",
    affectsSnapshot: true,
    touches: "core-and-costs",
    focus: { collection: "endpointClasses", id: input.name },
    write: versionedWrite(
      endpointClassEntity(input.name),
      input.expectedVersion,
      async (tx, current) => {
        const next = {
          ...current,
          displayName: given(input.displayName, current.displayName),
          match: given(input.match, current.match),
          cost: given(input.cost, current.cost),
          limits: given(input.limits, current.limits),
          anonymousLimit: given(input.anonymousLimit, current.anonymousLimit),
          ceiling: given(input.ceiling, current.ceiling),
          keyBy: given(input.keyBy, current.keyBy),
        };
        const row = await tx.endpointClass.update({
          where: { name: input.name },
          data: { ...endpointClassData(next), version: { increment: 1 } },
          select: endpointClassSelect,
        });
        const endpointClass = toEndpointClassRecord(row);
        return { after: auditView(endpointClass), value: { endpointClass } };
      },
    ),
  });
}

/** The new value when one was given (null included: it clears), else the current one. */
function given<Value>(next: Value | undefined, current: Value): Value {
  return next === undefined ? current : next;
}
