/**
 * Building blocks of the endpoint definitions: strict request schemas made from the services'
 * own schemas (one domain schema, never a looser copy), the change context built from the
 * principal, and the output shapes every response is parsed through.
 */
import { z } from "zod";
import { actorOf } from "@/lib/control/auth/principal";
import type { ChangeContext } from "@/lib/control/change-context";
import { ZExpectedVersion, ZReason } from "@/lib/control/change-context";
import type { Principal } from "../endpoint";
import { principalOf } from "../endpoint";

export { strictBody } from "../strict-body";
/** Why the change is made: required on every change, shown in the audit log. */
export { ZExpectedVersion, ZReason };

/** A strict object of path or query parameters. */
export function strictParams<Shape extends z.ZodRawShape>(shape: Shape) {
  const fields = Object.keys(shape).join(", ");
  return z.strictObject(shape, {
    error: (issue) =>
      issue.code === "unrecognized_keys"
        ? fields === ""
          ? "takes no parameters"
          : `expected only: ${fields}`
        : "invalid parameters",
  });
}

/** A whole number in a query string. */
export function queryInt(label: string, min: number, max: number) {
  return z.coerce
    .number({ error: `${label} must be a number` })
    .int({ error: `${label} must be a whole number` })
    .min(min, { error: `${label} must be at least ${min}` })
    .max(max, { error: `${label} must be at most ${max}` });
}

/** `true` or `false` in a query string. */
export function queryBoolean(label: string) {
  return z
    .enum(["true", "false"], { error: `${label} must be true or false` })
    .transform((value) => value === "true");
}

interface EndpointLikeInput {
  readonly principal: Principal | null;
  readonly requestId: string;
}

/** The change context of a request: its principal as the actor, the body's reason. */
export function changeContextOf(input: EndpointLikeInput, reason: string): ChangeContext {
  return { actor: actorOf(principalOf(input)), reason, requestId: input.requestId };
}

/** What every audited policy change returns besides its entity. */
export const ZChangeReceipt = {
  auditEntryId: z.string().describe("The change's audit entry."),
  policyVersion: z
    .number()
    .int()
    .nullable()
    .describe("The policy version the change produced; null when enforcers see no difference."),
  published: z
    .boolean()
    .describe("Whether that version was already in Redis when the response was sent."),
};

/** What an audited change outside the policy (operators, tokens) returns besides its entity. */
export const ZAuditReceipt = {
  auditEntryId: z.string().describe("The change's audit entry."),
};

export const ZTimestamps = {
  version: z
    .number()
    .int()
    .describe("Incremented by every change; send it back as expectedVersion."),
  createdAt: z.string(),
  updatedAt: z.string(),
};

/** A 204 has no body; its schema documents that. */
export const ZNoContent = z.null();
