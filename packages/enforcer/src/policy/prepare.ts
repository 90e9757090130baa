/**
 * The hot-path form of a snapshot: everything `resolveLimits` looks up, indexed once when a
 * snapshot is applied, so that resolving a request is a handful of map lookups (O(layers)), with
 * no parsing, no regular expression built and no scope string assembled per request.
 */
import { assertValidLimit } from "../limiter/arguments";
import type { LimitSpec } from "../limiter/types";
import { compileEndpointMatcher, type EndpointMatcher } from "./endpoint-matcher";
import { assertNever } from "./limit-math";
import type { CachedResolution, RuleSource } from "./resolution-types";
import type { TKeyBy, TOnStoreFailure, TPolicyLimit, TPolicyMode, TSnapshot } from "./schemas";
import { formatBucket, formatScope, parseScope } from "./scope";

export type { CachedResolution, Layer, RuleSource } from "./resolution-types";

/** A limit rule with its scope and the bucket its dry-run check would use. */
export interface PreparedRule {
  readonly scope: string;
  readonly dryRunBucket: string;
  readonly source: RuleSource;
  readonly limit: LimitSpec;
  readonly mode: TPolicyMode;
  readonly onStoreFailure: TOnStoreFailure;
}

export interface PreparedIncident {
  readonly id: string;
  readonly scope: string;
  readonly factor: number | null;
  readonly limit: LimitSpec | null;
  readonly startsAt: string;
  readonly expiresAt: string;
  readonly startsAtMs: number;
  readonly expiresAtMs: number;
}

export interface PreparedCandidate {
  readonly id: string;
  readonly scope: string;
  readonly bucket: string;
  readonly target: string;
  readonly limit: LimitSpec;
}

export interface PreparedEndpointClass {
  readonly name: string;
  readonly cost: number;
  readonly keyBy: TKeyBy;
  readonly endpointBucket: string;
  readonly ceilingBucket: string;
  /** `tier:T/endpoint:E` rules by tier name. */
  readonly tierRules: ReadonlyMap<string, PreparedRule>;
  /** `address/endpoint:E`. */
  readonly anonymousRule: PreparedRule | null;
  /** `ceiling/endpoint:E`. */
  readonly ceilingRule: PreparedRule | null;
  /** Candidates targeting `tier:T/endpoint:E`, by tier name (absent: none). */
  readonly tierCandidates: ReadonlyMap<string, readonly PreparedCandidate[]>;
  /** Candidates targeting `address/endpoint:E`. */
  readonly anonymousCandidates: readonly PreparedCandidate[];
  /** Candidates targeting `ceiling/endpoint:E`. */
  readonly ceilingCandidates: readonly PreparedCandidate[];
}

/** One customer's sparse rules: overrides and incidents, by layer. */
export interface CustomerRules {
  readonly account: PreparedRule | null;
  readonly endpoints: ReadonlyMap<string, PreparedRule>;
  readonly accountIncidents: readonly PreparedIncident[];
  readonly endpointIncidents: ReadonlyMap<string, readonly PreparedIncident[]>;
}

/**
 * A snapshot indexed for resolution. Build one per applied snapshot with {@link prepareSnapshot}
 * and pass it to `resolveLimits`. Its fields are an implementation detail of resolution.
 */
export class PreparedSnapshot {
  /**
   * Checks and trace slots of requests with no customer-specific rule: they depend on the tier (or
   * anonymity) and the endpoint class only, so each combination is computed once. Bounded by
   * (tiers + 1) x endpoint classes.
   */
  readonly cache = new Map<string, CachedResolution>();

  constructor(
    readonly snapshot: TSnapshot,
    readonly defaultTier: string,
    readonly defaultEndpointClass: PreparedEndpointClass,
    /** `tier:T` rules by tier name. */
    readonly tiers: ReadonlyMap<string, PreparedRule>,
    readonly endpointClasses: ReadonlyMap<string, PreparedEndpointClass>,
    /** `ceiling`. */
    readonly customerCeiling: PreparedRule,
    /** `address`. */
    readonly addressCeiling: PreparedRule,
    readonly customers: ReadonlyMap<string, CustomerRules>,
    /** Candidates targeting `tier:T`, by tier name (absent: none). */
    readonly tierCandidates: ReadonlyMap<string, readonly PreparedCandidate[]>,
    /** Candidates targeting `ceiling`. */
    readonly customerCeilingCandidates: readonly PreparedCandidate[],
    /** Candidates targeting `address`. */
    readonly addressCeilingCandidates: readonly PreparedCandidate[],
    readonly matcher: EndpointMatcher,
  ) {}

  get version(): number {
    return this.snapshot.version;
  }
}

const prepared = new WeakMap<TSnapshot, PreparedSnapshot>();
const NO_CANDIDATES: readonly PreparedCandidate[] = [];

/**
 * The indexed form of a validated snapshot (from `parseSnapshot` or `compileSnapshot`). Cached per
 * snapshot object, so calling it again for the same snapshot is free.
 */
export function prepareSnapshot(snapshot: TSnapshot): PreparedSnapshot {
  const cached = prepared.get(snapshot);
  if (cached !== undefined) return cached;
  const result = buildPreparedSnapshot(snapshot);
  prepared.set(snapshot, result);
  return result;
}

/**
 * The bare limit a store needs, without the policy's `mode` and `onStoreFailure`, frozen and
 * validated against the limiter's bounds here, when the snapshot is prepared: the stores then
 * recognise it and check nothing per request.
 */
export function toLimitSpec(limit: LimitSpec): LimitSpec {
  const spec = Object.freeze(bareLimitSpec(limit));
  assertValidLimit(spec);
  return spec;
}

function bareLimitSpec(limit: LimitSpec): LimitSpec {
  switch (limit.algorithm) {
    case "fixed-window":
    case "sliding-log":
    case "sliding-window":
      return { algorithm: limit.algorithm, limit: limit.limit, windowMs: limit.windowMs };
    case "token-bucket":
      return {
        algorithm: "token-bucket",
        capacity: limit.capacity,
        refillPerSec: limit.refillPerSec,
      };
    case "leaky-meter":
      return { algorithm: "leaky-meter", burst: limit.burst, drainPerSec: limit.drainPerSec };
    default:
      return assertNever(limit);
  }
}

function rule(scope: string, source: RuleSource, limit: TPolicyLimit): PreparedRule {
  const parsed = parseScope(scope);
  if (parsed === null) throw new TypeError(`invalid scope ${JSON.stringify(scope)}`);
  return {
    scope,
    dryRunBucket: formatBucket({ kind: "dry-run", scope: parsed }),
    source,
    limit: toLimitSpec(limit),
    mode: limit.mode,
    onStoreFailure: limit.onStoreFailure,
  };
}

function buildPreparedSnapshot(snapshot: TSnapshot): PreparedSnapshot {
  const policy = snapshot.policy;
  const tiers = new Map<string, PreparedRule>();
  for (const tier of policy.tiers) {
    tiers.set(
      tier.name,
      rule(formatScope({ kind: "tier", tier: tier.name, endpointClass: null }), "tier", tier.limit),
    );
  }

  const candidates = new Map<string, PreparedCandidate[]>();
  for (const candidate of policy.dryRunCandidates) {
    const prepared: PreparedCandidate = {
      id: candidate.id,
      scope: formatScope({ kind: "candidate", candidateId: candidate.id }),
      bucket: formatBucket({ kind: "candidate", candidateId: candidate.id }),
      target: candidate.target,
      limit: toLimitSpec(candidate.limit),
    };
    const list = candidates.get(candidate.target);
    if (list === undefined) candidates.set(candidate.target, [prepared]);
    else list.push(prepared);
  }

  const candidatesFor = (target: string): readonly PreparedCandidate[] =>
    candidates.get(target) ?? NO_CANDIDATES;
  const byTier = (targetOf: (tier: string) => string) => {
    const map = new Map<string, readonly PreparedCandidate[]>();
    for (const tier of policy.tiers) {
      const list = candidates.get(targetOf(tier.name));
      if (list !== undefined) map.set(tier.name, list);
    }
    return map;
  };

  const endpointClasses = new Map<string, PreparedEndpointClass>();
  for (const endpointClass of policy.endpointClasses) {
    const name = endpointClass.name;
    const tierRules = new Map<string, PreparedRule>();
    for (const [tier, limit] of Object.entries(endpointClass.limits)) {
      tierRules.set(
        tier,
        rule(formatScope({ kind: "tier", tier, endpointClass: name }), "tier", limit),
      );
    }
    endpointClasses.set(name, {
      name,
      cost: endpointClass.cost,
      keyBy: endpointClass.keyBy,
      endpointBucket: formatBucket({ kind: "endpoint", endpointClass: name }),
      ceilingBucket: formatBucket({ kind: "ceiling", endpointClass: name }),
      tierRules,
      anonymousRule:
        endpointClass.anonymousLimit === null
          ? null
          : rule(
              formatScope({ kind: "address", endpointClass: name }),
              "address",
              endpointClass.anonymousLimit,
            ),
      ceilingRule:
        endpointClass.ceiling === null
          ? null
          : rule(
              formatScope({ kind: "ceiling", endpointClass: name }),
              "ceiling",
              endpointClass.ceiling,
            ),
      tierCandidates: byTier((tier) => formatScope({ kind: "tier", tier, endpointClass: name })),
      anonymousCandidates: candidatesFor(formatScope({ kind: "address", endpointClass: name })),
      ceilingCandidates: candidatesFor(formatScope({ kind: "ceiling", endpointClass: name })),
    });
  }
  const defaultEndpointClass = endpointClasses.get(policy.defaultEndpointClass);
  if (defaultEndpointClass === undefined) {
    throw new TypeError(
      `snapshot's default endpoint class "${policy.defaultEndpointClass}" is not defined`,
    );
  }

  interface MutableCustomerRules {
    account: PreparedRule | null;
    endpoints: Map<string, PreparedRule>;
    accountIncidents: PreparedIncident[];
    endpointIncidents: Map<string, PreparedIncident[]>;
  }
  const customers = new Map<string, MutableCustomerRules>();
  const customerRules = (customerId: string): MutableCustomerRules => {
    let rules = customers.get(customerId);
    if (rules === undefined) {
      rules = {
        account: null,
        endpoints: new Map(),
        accountIncidents: [],
        endpointIncidents: new Map(),
      };
      customers.set(customerId, rules);
    }
    return rules;
  };
  for (const override of policy.customerOverrides) {
    const scope = formatScope({
      kind: "customer",
      customerId: override.customerId,
      endpointClass: override.endpointClass,
    });
    const prepared = rule(scope, "customer-override", override.limit);
    const rules = customerRules(override.customerId);
    if (override.endpointClass === null) rules.account = prepared;
    else rules.endpoints.set(override.endpointClass, prepared);
  }
  for (const incident of policy.incidentOverrides) {
    const prepared: PreparedIncident = {
      id: incident.id,
      scope: formatScope({ kind: "incident", incidentId: incident.id }),
      factor: incident.factor,
      limit: incident.limit === null ? null : toLimitSpec(incident.limit),
      startsAt: incident.startsAt,
      expiresAt: incident.expiresAt,
      startsAtMs: Date.parse(incident.startsAt),
      expiresAtMs: Date.parse(incident.expiresAt),
    };
    const rules = customerRules(incident.customerId);
    if (incident.endpointClass === null) {
      rules.accountIncidents.push(prepared);
    } else {
      const list = rules.endpointIncidents.get(incident.endpointClass);
      if (list === undefined) rules.endpointIncidents.set(incident.endpointClass, [prepared]);
      else list.push(prepared);
    }
  }

  return new PreparedSnapshot(
    snapshot,
    policy.defaultTier,
    defaultEndpointClass,
    tiers,
    endpointClasses,
    rule(
      formatScope({ kind: "ceiling", endpointClass: null }),
      "ceiling",
      policy.ceilings.perCustomer,
    ),
    rule(
      formatScope({ kind: "address", endpointClass: null }),
      "address",
      policy.ceilings.perAddress,
    ),
    customers,
    byTier((tier) => formatScope({ kind: "tier", tier, endpointClass: null })),
    candidatesFor(formatScope({ kind: "ceiling", endpointClass: null })),
    candidatesFor(formatScope({ kind: "address", endpointClass: null })),
    compileEndpointMatcher(policy.endpointClasses),
  );
}
