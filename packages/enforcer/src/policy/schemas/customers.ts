/** Customers, their overrides and incident overrides, dry-run candidates and the guardrails. */
import { z } from "zod";
import { DEFAULT_GUARDRAILS } from "../guardrails";
import { MAX_INCIDENT_DURATION_MS } from "../limit-math";
import {
  countField,
  endpointClassName,
  numberField,
  recordId,
  strict,
  textField,
  tierName,
  ZCustomerId,
  ZInstant,
} from "../schema-fields";
import { parseScope } from "../scope";
import { SLICE_BASIS_POINTS } from "../staged-slice";

import { ZLimitSpec, ZOverrideLimit } from "./limits";

// ---------------------------------------------------------------------------------------------
// Customers and overrides

/** A customer in the registry operators search. Enforcers never see the registry. */
export const ZCustomer = strict({
  id: ZCustomerId,
  displayName: textField("displayName", 200),
  /** The tier operators know the customer by. Gateways send the tier they authenticated. */
  tier: tierName(),
});
export type TCustomer = z.output<typeof ZCustomer>;

/** A standing limit for one customer, replacing its tier's limit for one layer. */
export const ZCustomerOverride = strict({
  customerId: ZCustomerId,
  /** The endpoint class it applies to, or null for the account layer (all endpoints). */
  endpointClass: endpointClassName().nullable(),
  /** Never `global`: an override is one customer's own limit, enforced per region. */
  limit: ZOverrideLimit,
});
export type TCustomerOverride = z.output<typeof ZCustomerOverride>;

/** Hard bound on an incident factor, whatever the guardrails say. */
export const MAX_FACTOR = 1000;

export const factorField = numberField("factor")
  .gt(0, { error: "factor must be more than 0" })
  .max(MAX_FACTOR, { error: `factor must be at most ${MAX_FACTOR}` });

/** A URL for a ticket: http or https only, so a console link can never run script. */
export const ZTicketUrl = z
  .url({ protocol: /^https?$/, error: "ticketUrl must be an http:// or https:// URL" })
  .max(2048, { error: "ticketUrl must be at most 2048 characters" });

export function refineIncidentShape(
  incident: { factor: number | null; limit: unknown; startsAt: string; expiresAt: string },
  ctx: z.RefinementCtx,
): void {
  if (incident.factor === null && incident.limit === null) {
    ctx.addIssue({
      code: "custom",
      path: ["factor"],
      message: "give either a factor (2 doubles the limit, 0.5 halves it) or an absolute limit",
    });
  } else if (incident.factor !== null && incident.limit !== null) {
    ctx.addIssue({
      code: "custom",
      path: ["limit"],
      message: "give either a factor or an absolute limit, not both",
    });
  }
  if (!(Date.parse(incident.expiresAt) > Date.parse(incident.startsAt))) {
    ctx.addIssue({
      code: "custom",
      path: ["expiresAt"],
      message: "expiresAt must be after startsAt",
    });
  }
}

/**
 * A temporary raise or cut for one customer and one layer. It applies while
 * `startsAt <= now < expiresAt` (wall clock) and stops by itself at its expiry.
 */
export const ZIncidentOverride = strict({
  /** Stable id (scope `incident:ID`). */
  id: recordId("incident id"),
  customerId: ZCustomerId,
  /** The endpoint class it applies to, or null for the account layer (all endpoints). */
  endpointClass: endpointClassName().nullable(),
  /**
   * Multiplies the limit it replaces (size and rate; a window keeps its length). Exactly one of
   * `factor` and `limit` is given.
   */
  factor: factorField.nullable().default(null),
  /** An absolute limit replacing it, compared with it by the guardrails. */
  limit: ZLimitSpec.nullable().default(null),
  startsAt: ZInstant,
  /** Required: every incident override ends by itself. */
  expiresAt: ZInstant,
  /** Who is responsible for it (an operator's id or email). */
  owner: textField("owner", 200),
  reason: textField("reason", 1000),
  ticketUrl: ZTicketUrl.nullable().default(null),
}).superRefine(refineIncidentShape);
export type TIncidentOverride = z.output<typeof ZIncidentOverride>;

/** The scope kinds a dry-run candidate may stand in for: the rules operators edit. */
export const CANDIDATE_TARGET_KINDS = ["tier", "ceiling", "address"] as const;

/**
 * What a dry-run candidate would replace, as a scope: `tier:T`, `tier:T/endpoint:E` (also a new
 * endpoint limit), `ceiling`, `ceiling/endpoint:E`, `address` or `address/endpoint:E`.
 */
export const ZCandidateTarget = z
  .string({ error: "target is required" })
  .superRefine((value, ctx) => {
    const scope = parseScope(value);
    if (scope === null || !(CANDIDATE_TARGET_KINDS as readonly string[]).includes(scope.kind)) {
      ctx.addIssue({
        code: "custom",
        message:
          "target must be the scope the candidate would replace: tier:T, tier:T/endpoint:E, ceiling, ceiling/endpoint:E, address or address/endpoint:E",
      });
    }
  });

/**
 * A limit evaluated in dry-run next to the one it would replace, for the same subjects, on its own
 * bucket (`candidate:ID`): it never rejects and never consumes from what is enforced.
 */
export const ZDryRunCandidate = strict({
  /** Stable id (scope and bucket `candidate:ID`). */
  id: recordId("candidate id"),
  target: ZCandidateTarget,
  limit: ZLimitSpec,
  /**
   * Present while the candidate is a staged change: the share of subjects, in basis points (0 to
   * 10,000), enforced under `limit` instead of the target rule (see `staged-slice.ts`). Absent for
   * a plain dry-run candidate, so a candidate's text is what it was before staged changes existed.
   */
  sliceBasisPoints: countField("sliceBasisPoints", SLICE_BASIS_POINTS, 0).optional(),
});
export type TDryRunCandidate = z.output<typeof ZDryRunCandidate>;

/** Bounds on incident overrides. See `guardrails.ts`. */
export const ZGuardrails = strict({
  maxIncidentFactor: numberField("maxIncidentFactor")
    .gt(1, { error: "maxIncidentFactor must be more than 1" })
    .max(MAX_FACTOR, { error: `maxIncidentFactor must be at most ${MAX_FACTOR}` })
    .default(DEFAULT_GUARDRAILS.maxIncidentFactor),
  maxIncidentDurationMs: countField(
    "maxIncidentDurationMs",
    MAX_INCIDENT_DURATION_MS,
    60_000,
  ).default(DEFAULT_GUARDRAILS.maxIncidentDurationMs),
});
export type TGuardrails = z.output<typeof ZGuardrails>;
