/**
 * What a policy edit changes, for the preview an operator reads before saving: the limits that
 * change, by scope, with their old and new values; the other fields that change (an endpoint
 * class's cost, its match rules, the default tier); and, given who holds an override, which
 * customers keep their own limit because their override outranks the changed rule.
 *
 * Pure: takes the rules before and after (a policy document's or a snapshot's policy both fit)
 * and the override holders the caller looked up. No I/O, no clock.
 */
import { canonicalJson } from "./canonical";
import type { TPolicyLimit } from "./schemas";
import { formatScope, parseScope } from "./scope";

/** The parts of a policy whose limits an operator edits: tiers, endpoint classes, ceilings. */
export interface PolicyRules {
  readonly defaultTier: string;
  readonly defaultEndpointClass: string;
  readonly tiers: readonly { readonly name: string; readonly limit: TPolicyLimit }[];
  readonly endpointClasses: readonly {
    readonly name: string;
    readonly cost: number;
    readonly keyBy: string;
    readonly match: readonly { readonly method: string; readonly path: string }[];
    readonly limits: Readonly<Record<string, TPolicyLimit>>;
    readonly anonymousLimit: TPolicyLimit | null;
    readonly ceiling: TPolicyLimit | null;
  }[];
  readonly ceilings: { readonly perCustomer: TPolicyLimit; readonly perAddress: TPolicyLimit };
}

/**
 * Who a limit applies to, which decides whether an override can outrank it:
 * - `tier`: every customer of the tier (scope `tier:T` or `tier:T/endpoint:E`); a customer
 *   override or incident on the same layer replaces it for that customer;
 * - `ceiling`: every customer, never replaced (`ceiling`, `ceiling/endpoint:E`);
 * - `anonymous`: anonymous requests by address, never replaced (`address`, `address/endpoint:E`).
 */
export type LimitReachKind = "tier" | "ceiling" | "anonymous";

/** One limit that an edit adds, changes or removes. */
export interface LimitChange {
  /** The limit's scope, e.g. `tier:free`, `tier:pro/endpoint:reports`, `ceiling`. */
  readonly scope: string;
  readonly reach: LimitReachKind;
  /** The tier of a `tier` scope, else null. */
  readonly tier: string | null;
  /** The endpoint class of an endpoint-layer scope, else null (the account layer). */
  readonly endpointClass: string | null;
  /** Null: the limit is new. */
  readonly before: TPolicyLimit | null;
  /** Null: the limit is removed. */
  readonly after: TPolicyLimit | null;
}

/** A change to something other than a limit. */
export interface FieldChange {
  /** What it belongs to, in words: `endpoint class "reports"`, `settings`. */
  readonly owner: string;
  /** `cost`, `match`, `keyBy`, `defaultTier`, `defaultEndpointClass`. */
  readonly field: string;
  readonly before: unknown;
  readonly after: unknown;
}

export interface PolicyRulesDiff {
  /** Ordered: ceilings, then tiers, then endpoint classes, each by name. */
  readonly limits: readonly LimitChange[];
  readonly fields: readonly FieldChange[];
}

function sameValue(a: unknown, b: unknown): boolean {
  return canonicalJson(a ?? null) === canonicalJson(b ?? null);
}

function byName<T extends { readonly name: string }>(items: readonly T[]): Map<string, T> {
  return new Map(items.map((item) => [item.name, item]));
}

function sortedUnion(a: Iterable<string>, b: Iterable<string>): string[] {
  return [...new Set([...a, ...b])].sort((x, y) => (x < y ? -1 : x > y ? 1 : 0));
}

/**
 * The limits and fields that differ between two versions of the rules. A limit whose only
 * difference is in how it is spelled (key order) is not a change. A tier or class that exists on
 * one side only contributes each of its limits as added or removed.
 */
export function diffPolicyRules(before: PolicyRules, after: PolicyRules): PolicyRulesDiff {
  const limits: LimitChange[] = [];
  const fields: FieldChange[] = [];
  const pushLimit = (change: LimitChange) => {
    if (!sameValue(change.before, change.after)) limits.push(change);
  };

  pushLimit({
    scope: "ceiling",
    reach: "ceiling",
    tier: null,
    endpointClass: null,
    before: before.ceilings.perCustomer,
    after: after.ceilings.perCustomer,
  });
  pushLimit({
    scope: "address",
    reach: "anonymous",
    tier: null,
    endpointClass: null,
    before: before.ceilings.perAddress,
    after: after.ceilings.perAddress,
  });

  const tiersBefore = byName(before.tiers);
  const tiersAfter = byName(after.tiers);
  for (const name of sortedUnion(tiersBefore.keys(), tiersAfter.keys())) {
    pushLimit({
      scope: formatScope({ kind: "tier", tier: name, endpointClass: null }),
      reach: "tier",
      tier: name,
      endpointClass: null,
      before: tiersBefore.get(name)?.limit ?? null,
      after: tiersAfter.get(name)?.limit ?? null,
    });
  }

  const classesBefore = byName(before.endpointClasses);
  const classesAfter = byName(after.endpointClasses);
  for (const name of sortedUnion(classesBefore.keys(), classesAfter.keys())) {
    const old = classesBefore.get(name);
    const next = classesAfter.get(name);
    pushLimit({
      scope: formatScope({ kind: "ceiling", endpointClass: name }),
      reach: "ceiling",
      tier: null,
      endpointClass: name,
      before: old?.ceiling ?? null,
      after: next?.ceiling ?? null,
    });
    pushLimit({
      scope: formatScope({ kind: "address", endpointClass: name }),
      reach: "anonymous",
      tier: null,
      endpointClass: name,
      before: old?.anonymousLimit ?? null,
      after: next?.anonymousLimit ?? null,
    });
    const tierNames = sortedUnion(Object.keys(old?.limits ?? {}), Object.keys(next?.limits ?? {}));
    for (const tier of tierNames) {
      pushLimit({
        scope: formatScope({ kind: "tier", tier, endpointClass: name }),
        reach: "tier",
        tier,
        endpointClass: name,
        before: old?.limits[tier] ?? null,
        after: next?.limits[tier] ?? null,
      });
    }
    if (old !== undefined && next !== undefined) {
      const owner = `endpoint class "${name}"`;
      for (const field of ["cost", "keyBy", "match"] as const) {
        if (!sameValue(old[field], next[field])) {
          fields.push({ owner, field, before: old[field], after: next[field] });
        }
      }
    }
  }

  for (const field of ["defaultTier", "defaultEndpointClass"] as const) {
    if (before[field] !== after[field]) {
      fields.push({ owner: "settings", field, before: before[field], after: after[field] });
    }
  }

  return { limits: sortLimitChanges(limits), fields };
}

const REACH_ORDER: Record<LimitReachKind, number> = { ceiling: 0, anonymous: 1, tier: 2 };

function sortLimitChanges(changes: LimitChange[]): LimitChange[] {
  return changes.sort(
    (a, b) =>
      REACH_ORDER[a.reach] - REACH_ORDER[b.reach] ||
      (a.endpointClass === null ? 0 : 1) - (b.endpointClass === null ? 0 : 1) ||
      (a.scope < b.scope ? -1 : a.scope > b.scope ? 1 : 0),
  );
}

/** A customer's standing override or current incident, with the tier the registry gives it. */
export interface OverrideHolder {
  readonly customerId: string;
  /** The customer's tier in the registry. */
  readonly tier: string;
  /** Null: the account layer. */
  readonly endpointClass: string | null;
  /** `override`: a standing customer override; `incident`: a current incident override. */
  readonly source: "override" | "incident";
  /**
   * For an incident: true when it gives an absolute limit (it replaces the rule), false for a
   * factor (it scales whatever rule it replaces, so an edit of that rule still reaches the
   * customer, scaled). Standing overrides always replace.
   */
  readonly isAbsolute: boolean;
}

/**
 * Whether `holder` keeps its own limit whatever `change` does: it is on the changed tier and layer,
 * and it replaces the rule (a standing override, or an incident with an absolute limit). Ceilings
 * and anonymous limits are never replaced, so no holder outranks them.
 */
export function outranksChange(holder: OverrideHolder, change: LimitChange): boolean {
  if (change.reach !== "tier") return false;
  if (holder.tier !== change.tier || holder.endpointClass !== change.endpointClass) return false;
  return holder.source === "override" || holder.isAbsolute;
}

/** For each change, the holders whose override still wins (in the order given). */
export function outrankingHolders<Holder extends OverrideHolder>(
  change: LimitChange,
  holders: readonly Holder[],
): Holder[] {
  return holders.filter((holder) => outranksChange(holder, change));
}

/**
 * The rule a scope names in `rules`, or null when there is none (a candidate on
 * `tier:T/endpoint:E` with no such limit would be a new endpoint limit). Scopes that are not rules
 * operators edit (customers, incidents, candidates) are null too.
 */
export function limitAtScope(rules: PolicyRules, scope: string): TPolicyLimit | null {
  const parsed = parseScope(scope);
  if (parsed === null) return null;
  switch (parsed.kind) {
    case "ceiling":
      return parsed.endpointClass === null
        ? rules.ceilings.perCustomer
        : (rules.endpointClasses.find((c) => c.name === parsed.endpointClass)?.ceiling ?? null);
    case "address":
      return parsed.endpointClass === null
        ? rules.ceilings.perAddress
        : (rules.endpointClasses.find((c) => c.name === parsed.endpointClass)?.anonymousLimit ??
            null);
    case "tier":
      return parsed.endpointClass === null
        ? (rules.tiers.find((t) => t.name === parsed.tier)?.limit ?? null)
        : (rules.endpointClasses.find((c) => c.name === parsed.endpointClass)?.limits[
            parsed.tier
          ] ?? null);
    default:
      return null;
  }
}
