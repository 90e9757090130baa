/**
 * What a backtest replays: a draft, in the policy model the edit forms and services already use
 * (no second policy model). A tier, endpoint-class or settings (ceiling) edit is the policy
 * preview's own input (`ZPreviewPolicyChangeOptions`, validated as the preview validates it); a
 * customer override is `ZCustomerOverride`; an incident takes the raise form's customer, layer,
 * factor or limit (in force over the whole replay); a dry-run candidate, new or existing, is
 * replayed as if promoted: its limit enforced in place of the rule it targets, keeping that
 * rule's failure policy, as `promoteCandidate` does.
 *
 * `applyBacktestDraft` is pure: the snapshot in force plus the draft gives the draft's snapshot,
 * parsed with the snapshot schema (a draft that breaks the policy is refused, naming the field).
 */
import {
  type FieldPath,
  fieldErrorsFromZod,
  parseScope,
  type TSnapshot,
  ZCustomerOverride,
  ZDryRunCandidate,
  ZIncidentOverride,
  ZSnapshot,
} from "@limitplane/enforcer/policy";
import { z } from "zod";
import { toFieldErrors, validationError } from "../errors";
import { ZPreviewPolicyChangeOptions } from "../policy/preview-policy-change";

const incidentShape = ZIncidentOverride.shape;

export const ZBacktestDraft = z.discriminatedUnion(
  "kind",
  [
    ...ZPreviewPolicyChangeOptions.options,
    z.strictObject({
      kind: z.literal("customer-override"),
      ...ZCustomerOverride.shape,
    }),
    z
      .strictObject({
        kind: z.literal("incident"),
        customerId: incidentShape.customerId,
        endpointClass: incidentShape.endpointClass,
        factor: incidentShape.factor,
        limit: incidentShape.limit,
      })
      .superRefine((incident, ctx) => {
        if ((incident.factor === null) === (incident.limit === null)) {
          ctx.addIssue({
            code: "custom",
            path: ["factor"],
            message: "give either a factor (2 doubles the limit) or an absolute limit, not both",
          });
        }
      }),
    z.strictObject({
      kind: z.literal("candidate"),
      /** An existing candidate (replayed as promoted), or none: `target` and `limit` say it. */
      id: ZDryRunCandidate.shape.id.optional(),
      target: ZDryRunCandidate.shape.target.optional(),
      limit: ZDryRunCandidate.shape.limit.optional(),
    }),
  ],
  {
    error:
      "kind must be one of: tier, endpoint-class, settings, customer-override, incident, candidate",
  },
);
export type TBacktestDraft = z.output<typeof ZBacktestDraft>;

/** The id the draft's incident gets in the replayed snapshot. */
export const DRAFT_INCIDENT_ID = "backtest-draft";

type TSnapshotPolicy = TSnapshot["policy"];

type Limit = TSnapshotPolicy["ceilings"]["perCustomer"];

/** `limit` enforced in place of `rule`, keeping the rule's failure policy. */
function promoted(
  limit: object,
  rule: Limit | null | undefined,
  fallback: Limit["onStoreFailure"],
) {
  return { ...limit, mode: "enforce", onStoreFailure: rule?.onStoreFailure ?? fallback } as Limit;
}

function refuse(path: FieldPath, message: string): never {
  throw validationError(toFieldErrors([{ path, message }], ["draft"]));
}

/**
 * The snapshot `current` would be with `draft` applied, over a replay of [fromMs, toMs) (an
 * incident draft is in force for all of it). Throws VALIDATION_FAILED naming the field.
 */
export function applyBacktestDraft(
  current: TSnapshot,
  draft: TBacktestDraft,
  span: { readonly fromMs: number; readonly toMs: number },
): TSnapshot {
  const policy = current.policy;
  let edited: Record<string, unknown>;
  switch (draft.kind) {
    case "tier": {
      if (!policy.tiers.some((tier) => tier.name === draft.name)) {
        refuse(["name"], `tier "${draft.name}" does not exist`);
      }
      edited = {
        ...policy,
        tiers: policy.tiers.map((tier) =>
          tier.name === draft.name ? { ...tier, limit: draft.limit } : tier,
        ),
      };
      break;
    }
    case "endpoint-class": {
      const { kind: _kind, name, ...fields } = draft;
      if (!policy.endpointClasses.some((c) => c.name === name)) {
        refuse(["name"], `endpoint class "${name}" does not exist`);
      }
      const changed = Object.fromEntries(
        Object.entries(fields).filter(([, value]) => value !== undefined),
      );
      edited = {
        ...policy,
        endpointClasses: policy.endpointClasses.map((c) =>
          c.name === name ? { ...c, ...changed } : c,
        ),
      };
      break;
    }
    case "settings": {
      edited = {
        ...policy,
        defaultTier: draft.defaultTier ?? policy.defaultTier,
        defaultEndpointClass: draft.defaultEndpointClass ?? policy.defaultEndpointClass,
        ceilings: {
          perCustomer: draft.ceilings?.perCustomer ?? policy.ceilings.perCustomer,
          perAddress: draft.ceilings?.perAddress ?? policy.ceilings.perAddress,
        },
      };
      break;
    }
    case "customer-override": {
      const { kind: _kind, ...override } = draft;
      edited = {
        ...policy,
        customerOverrides: [
          ...policy.customerOverrides.filter(
            (o) =>
              !(o.customerId === override.customerId && o.endpointClass === override.endpointClass),
          ),
          override,
        ],
      };
      break;
    }
    case "incident": {
      edited = {
        ...policy,
        incidentOverrides: [
          // The draft stands in for any incident on the same customer and layer.
          ...policy.incidentOverrides.filter(
            (i) => !(i.customerId === draft.customerId && i.endpointClass === draft.endpointClass),
          ),
          {
            id: DRAFT_INCIDENT_ID,
            customerId: draft.customerId,
            endpointClass: draft.endpointClass,
            factor: draft.factor,
            limit: draft.limit,
            startsAt: new Date(Math.floor(span.fromMs) - 1).toISOString(),
            expiresAt: new Date(Math.ceil(span.toMs) + 1).toISOString(),
          },
        ],
      };
      break;
    }
    case "candidate": {
      edited = applyCandidate(policy, draft);
      break;
    }
    default: {
      const unknownDraft: never = draft;
      throw new Error(`unknown draft ${JSON.stringify(unknownDraft)}`);
    }
  }
  const parsed = ZSnapshot.safeParse({ ...current, policy: edited });
  if (!parsed.success) {
    throw validationError(
      toFieldErrors(fieldErrorsFromZod(parsed.error), ["draft"]),
      `The draft would make an invalid policy: ${parsed.error.issues[0]?.message ?? "invalid"}`,
    );
  }
  return parsed.data;
}

function applyCandidate(
  policy: TSnapshotPolicy,
  draft: Extract<TBacktestDraft, { kind: "candidate" }>,
): Record<string, unknown> {
  let target: string;
  let limit: object;
  if (draft.id !== undefined) {
    if (draft.target !== undefined || draft.limit !== undefined) {
      refuse(["id"], "give an existing candidate's id, or a target and a limit, not both");
    }
    const existing = policy.dryRunCandidates.find((c) => c.id === draft.id);
    if (existing === undefined) refuse(["id"], `candidate "${draft.id}" does not exist`);
    target = existing.target;
    limit = existing.limit;
  } else {
    if (draft.target === undefined) refuse(["target"], "target is required without an id");
    if (draft.limit === undefined) refuse(["limit"], "limit is required without an id");
    target = draft.target;
    limit = draft.limit;
  }
  const scope = parseScope(target);
  const others = policy.dryRunCandidates.filter((c) => c.id !== draft.id);
  const withClass = (
    name: string | null,
    edit: (c: TSnapshotPolicy["endpointClasses"][number]) => object,
  ) => {
    if (name === null) return policy.endpointClasses;
    if (!policy.endpointClasses.some((c) => c.name === name)) {
      refuse(["target"], `endpoint class "${name}" does not exist`);
    }
    return policy.endpointClasses.map((c) => (c.name === name ? edit(c) : c));
  };
  if (scope?.kind === "tier") {
    const tierName = scope.tier;
    if (!policy.tiers.some((t) => t.name === tierName)) {
      refuse(["target"], `tier "${tierName}" does not exist`);
    }
    if (scope.endpointClass === null) {
      return {
        ...policy,
        dryRunCandidates: others,
        tiers: policy.tiers.map((t) =>
          t.name === tierName ? { ...t, limit: promoted(limit, t.limit, "open") } : t,
        ),
      };
    }
    return {
      ...policy,
      dryRunCandidates: others,
      endpointClasses: withClass(scope.endpointClass, (c) => ({
        ...c,
        limits: { ...c.limits, [tierName]: promoted(limit, c.limits[tierName], "open") },
      })),
    };
  }
  if (scope?.kind === "ceiling") {
    if (scope.endpointClass === null) {
      return {
        ...policy,
        dryRunCandidates: others,
        ceilings: {
          ...policy.ceilings,
          perCustomer: promoted(limit, policy.ceilings.perCustomer, "local"),
        },
      };
    }
    return {
      ...policy,
      dryRunCandidates: others,
      endpointClasses: withClass(scope.endpointClass, (c) => ({
        ...c,
        ceiling: promoted(limit, c.ceiling, "local"),
      })),
    };
  }
  if (scope?.kind === "address") {
    if (scope.endpointClass === null) {
      return {
        ...policy,
        dryRunCandidates: others,
        ceilings: {
          ...policy.ceilings,
          perAddress: promoted(limit, policy.ceilings.perAddress, "local"),
        },
      };
    }
    return {
      ...policy,
      dryRunCandidates: others,
      endpointClasses: withClass(scope.endpointClass, (c) => ({
        ...c,
        anonymousLimit: promoted(limit, c.anonymousLimit, "closed"),
      })),
    };
  }
  return refuse(["target"], `target ${JSON.stringify(target)} is not a rule a candidate replaces`);
}
