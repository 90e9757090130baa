/**
 * Which policy changes need a second person, as a pure function of the approval settings and the
 * change as its audit entry records it (before and after). The gate (approval-gate.ts) asks it
 * inside the change's transaction, so it judges the entity as it stands under the policy lock.
 */
import {
  limitRatePerSec,
  limitSize,
  parseScope,
  type TPolicyLimit,
  ZLimitSpec,
  ZPolicyLimit,
} from "@limitplane/enforcer/policy";
import { z } from "zod";
import type { AuditAction, AuditEntityType } from "../audit/audit-actions";

export interface ApprovalRules {
  /** @default false */
  readonly isEnabled: boolean;
  /** Lowering a tier or endpoint-class limit by more than this needs approval. @default 25 */
  readonly limitDecreasePercent: number;
  /** Any change to the global ceilings needs approval. @default true */
  readonly isCeilingChangeGated: boolean;
  /** Deleting a tier or an endpoint class needs approval. @default true */
  readonly isDeletionGated: boolean;
  /** An import changing more policy entries than this needs approval. @default 100 */
  readonly importChangedEntries: number;
  /** How long a pending request lives. @default 259_200_000 (3 days) */
  readonly requestLifetimeMs: number;
}

/** The defaults; they match the column defaults of ApprovalSettings in prisma/schema.prisma. */
export const DEFAULT_APPROVAL_RULES: ApprovalRules = {
  isEnabled: false,
  limitDecreasePercent: 25,
  isCeilingChangeGated: true,
  isDeletionGated: true,
  importChangedEntries: 100,
  requestLifetimeMs: 3 * 24 * 3_600_000,
};

/** A change as the gate sees it: its action, entity, and the audit entry's before and after. */
export interface GatedChange {
  readonly action: AuditAction;
  readonly entityType: AuditEntityType;
  readonly entityId: string;
  readonly before: unknown;
  readonly after: unknown;
  /** For an import: how many policy entries it changes; null otherwise. */
  readonly changedEntries: number | null;
}

const ZLimitHolder = z.looseObject({ limit: ZPolicyLimit });
const ZClassLimits = z.looseObject({
  limits: z.record(z.string(), ZPolicyLimit),
  anonymousLimit: ZPolicyLimit.nullable(),
  ceiling: ZPolicyLimit.nullable(),
});
const ZCeilingsHolder = z.looseObject({ ceilings: z.unknown() });
const ZStagedStart = z.looseObject({
  target: z.string(),
  limit: ZLimitSpec,
  previousLimit: ZLimitSpec.nullable(),
});

/**
 * A change of the limit at `target` (a promotion, a staged change's start) as the change to the
 * rule it replaces, so the same rules judge it as the direct edit of that rule. A target that is
 * not a rule a candidate can replace is judged as needing approval (an unreadable limit).
 */
export function ruleChangeAt(
  action: AuditAction,
  target: string,
  current: TPolicyLimit | null,
  proposed: TPolicyLimit,
): GatedChange {
  const scope = parseScope(target);
  const base = { action, changedEntries: null };
  if (
    scope === null ||
    (scope.kind !== "tier" && scope.kind !== "ceiling" && scope.kind !== "address")
  ) {
    return { ...base, entityType: "tier", entityId: target, before: {}, after: {} };
  }
  if (scope.endpointClass === null) {
    return scope.kind === "tier"
      ? {
          ...base,
          entityType: "tier",
          entityId: scope.tier,
          before: { limit: current },
          after: { limit: proposed },
        }
      : {
          ...base,
          entityType: "settings",
          entityId: "settings",
          before: { ceilings: { [scope.kind]: current } },
          after: { ceilings: { [scope.kind]: proposed } },
        };
  }
  const classLimits = (limit: TPolicyLimit | null) => ({
    limits: scope.kind === "tier" && limit !== null ? { [scope.tier]: limit } : {},
    anonymousLimit: scope.kind === "address" ? limit : null,
    ceiling: scope.kind === "ceiling" ? limit : null,
  });
  return {
    ...base,
    entityType: "endpoint-class",
    entityId: scope.endpointClass,
    before: classLimits(current),
    after: classLimits(proposed),
  };
}

/**
 * How much stricter `after` is than `before`, in percent (0 when not stricter): the larger of the
 * drop in size (what is admitted back to back) and in sustained rate, so neither a smaller burst
 * nor a slower refill slips through.
 */
export function limitDecreasePercent(before: TPolicyLimit, after: TPolicyLimit): number {
  const size = 1 - limitSize(after) / limitSize(before);
  const rate = 1 - limitRatePerSec(after) / limitRatePerSec(before);
  return Math.max(0, size, rate) * 100;
}

function lowered(
  label: string,
  before: TPolicyLimit | null | undefined,
  after: TPolicyLimit | null | undefined,
  rules: ApprovalRules,
): string[] {
  if (before == null || after == null) return [];
  const percent = limitDecreasePercent(before, after);
  if (percent <= rules.limitDecreasePercent) return [];
  return [
    `${label} is lowered by ${Math.round(percent)} % (more than ${rules.limitDecreasePercent} %)`,
  ];
}

function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (typeof value === "object" && value !== null) {
    const keys = Object.keys(value).sort();
    return `{${keys
      .map((key) => `${JSON.stringify(key)}:${canonical((value as Record<string, unknown>)[key])}`)
      .join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}

/**
 * Why `change` needs a second person's approval under `rules`, one sentence per reason; empty
 * when it does not (or approvals are off). A before or after the rules cannot read is treated as
 * needing approval: an unreadable change is not a safe one.
 */
export function approvalReasons(rules: ApprovalRules, change: GatedChange): string[] {
  if (!rules.isEnabled) return [];
  const isDeletion = change.after === null && change.before !== null;
  switch (change.entityType) {
    case "tier": {
      const label = `tier "${change.entityId}"`;
      if (isDeletion) return rules.isDeletionGated ? [`${label} is deleted`] : [];
      if (change.before === null) return [];
      const before = ZLimitHolder.safeParse(change.before);
      const after = ZLimitHolder.safeParse(change.after);
      if (!before.success || !after.success) return [`${label}'s limit could not be compared`];
      return lowered(`${label}'s limit`, before.data.limit, after.data.limit, rules);
    }
    case "endpoint-class": {
      const label = `endpoint class "${change.entityId}"`;
      if (isDeletion) return rules.isDeletionGated ? [`${label} is deleted`] : [];
      if (change.before === null) return [];
      const before = ZClassLimits.safeParse(change.before);
      const after = ZClassLimits.safeParse(change.after);
      if (!before.success || !after.success) return [`${label}'s limits could not be compared`];
      return [
        ...Object.keys(after.data.limits)
          .sort()
          .flatMap((tier) =>
            lowered(
              `${label}'s limit for tier "${tier}"`,
              before.data.limits[tier],
              after.data.limits[tier],
              rules,
            ),
          ),
        ...lowered(
          `${label}'s anonymous limit`,
          before.data.anonymousLimit,
          after.data.anonymousLimit,
          rules,
        ),
        ...lowered(`${label}'s ceiling`, before.data.ceiling, after.data.ceiling, rules),
      ];
    }
    case "settings": {
      if (!rules.isCeilingChangeGated) return [];
      const before = ZCeilingsHolder.safeParse(change.before);
      const after = ZCeilingsHolder.safeParse(change.after);
      if (!before.success || !after.success) return ["the ceilings could not be compared"];
      return canonical(before.data.ceilings) === canonical(after.data.ceilings)
        ? []
        : ["the global ceilings change"];
    }
    case "policy": {
      const changed = change.changedEntries ?? 0;
      return changed > rules.importChangedEntries
        ? [`the import changes ${changed} policy entries (more than ${rules.importChangedEntries})`]
        : [];
    }
    case "staged-change": {
      // A staged change is judged when it starts, as the edit it ends in: once approved (or not
      // needing approval), its steps, completion and revert need none.
      if (change.action !== "staged-change.start") return [];
      const after = ZStagedStart.safeParse(change.after);
      if (!after.success) return ["the staged change's limits could not be compared"];
      const enforced = (limit: z.output<typeof ZLimitSpec>): TPolicyLimit => ({
        ...limit,
        mode: "enforce",
        onStoreFailure: "local",
      });
      const { target, limit, previousLimit } = after.data;
      return approvalReasons(
        rules,
        ruleChangeAt(
          change.action,
          target,
          previousLimit === null ? null : enforced(previousLimit),
          enforced(limit),
        ),
      );
    }
    default:
      return [];
  }
}
