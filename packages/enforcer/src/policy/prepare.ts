/**
 * The hot-path form of a snapshot: everything `resolveLimits` looks up, indexed once when a
 * snapshot is applied, so that resolving a request is a handful of map lookups (O(layers)), with
 * no parsing, no regular expression built and no scope string assembled per request.
 */

import { assertValidLimit } from "../limiter/arguments";
import type { LimitSpec } from "../limiter/types";
import { DescriptorRuleIndex, NO_DESCRIPTOR_RULES } from "./descriptor-rules";
import { compileEndpointMatcher, type EndpointMatcher } from "./endpoint-matcher";
import { assertNever } from "./limit-math";
import type { CachedResolution, RuleSource } from "./resolution-types";
import {
  DEFAULT_DESCRIPTOR_MAPPINGS,
  type TDescriptorMapping,
  type TKeyBy,
  type TOnStoreFailure,
  type TPolicyLimit,
  type TPolicyMode,
  type TSnapshot,
  type TSnapshotPolicy,
} from "./schemas";
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
  /** `replicated` when the limit asks for it; absent otherwise (see `LimitCheck.durability`). */
  readonly durability?: "replicated";
  /** Set when the limit is `global`: divided among regions (docs/regions.md). */
  readonly global?: true;
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
  /** Null for a plain dry-run candidate; a staged change's slice otherwise (`staged-slice.ts`). */
  readonly sliceBasisPoints: number | null;
  /** `candidate:ID/slice`: its limit, enforced for subjects in the slice. */
  readonly sliceScope: string;
  /** `candidate:ID/slice-previous`: the rule it replaces, in dry-run for subjects in the slice. */
  readonly slicePreviousScope: string;
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

/** Where resolution finds a customer's rules: undefined for a customer without any. */
export interface CustomerRulesLookup {
  get(customerId: string): CustomerRules | undefined;
}

/** Everything of a snapshot except the per-customer rules, indexed for resolution. */
export interface PreparedCore {
  readonly defaultTier: string;
  readonly defaultEndpointClass: PreparedEndpointClass;
  /** `tier:T` rules by tier name. */
  readonly tiers: ReadonlyMap<string, PreparedRule>;
  readonly endpointClasses: ReadonlyMap<string, PreparedEndpointClass>;
  /** `ceiling`. */
  readonly customerCeiling: PreparedRule;
  /** `address`. */
  readonly addressCeiling: PreparedRule;
  /** Candidates targeting `tier:T`, by tier name (absent: none). */
  readonly tierCandidates: ReadonlyMap<string, readonly PreparedCandidate[]>;
  /** Candidates targeting `ceiling`. */
  readonly customerCeilingCandidates: readonly PreparedCandidate[];
  /** Candidates targeting `address`. */
  readonly addressCeilingCandidates: readonly PreparedCandidate[];
  /** The candidates that are staged changes, by id: whose slices a resolution depends on. */
  readonly stagedCandidates: readonly PreparedCandidate[];
  readonly matcher: EndpointMatcher;
  /**
   * The descriptor mappings the rate-limit service reads (`descriptor-mappings.ts`), by domain;
   * the defaults when the policy has none.
   */
  readonly descriptorMappings: ReadonlyMap<string, TDescriptorMapping>;
}

/**
 * A policy indexed for resolution: pass it to `resolveLimits`. Build one with
 * {@link prepareSnapshot} from a snapshot, or take an enforcer's from its `PolicyState`. Its
 * fields are an implementation detail of resolution.
 */
export class PreparedSnapshot implements PreparedCore {
  /**
   * Checks and trace slots of requests with no customer-specific rule: they depend on the tier (or
   * anonymity) and the endpoint class only, so each combination is computed once. Bounded by
   * (tiers + 1) x endpoint classes.
   */
  readonly cache = new Map<string, CachedResolution>();
  readonly defaultTier: string;
  readonly defaultEndpointClass: PreparedEndpointClass;
  readonly tiers: ReadonlyMap<string, PreparedRule>;
  readonly endpointClasses: ReadonlyMap<string, PreparedEndpointClass>;
  readonly customerCeiling: PreparedRule;
  readonly addressCeiling: PreparedRule;
  readonly tierCandidates: ReadonlyMap<string, readonly PreparedCandidate[]>;
  readonly customerCeilingCandidates: readonly PreparedCandidate[];
  readonly addressCeilingCandidates: readonly PreparedCandidate[];
  readonly stagedCandidates: readonly PreparedCandidate[];
  readonly matcher: EndpointMatcher;
  readonly descriptorMappings: ReadonlyMap<string, TDescriptorMapping>;

  constructor(
    readonly version: number,
    core: PreparedCore,
    readonly customers: CustomerRulesLookup,
    /** The descriptor rules, indexed for the rate-limit service (`descriptor-rules.ts`). */
    readonly descriptorRules: DescriptorRuleIndex = NO_DESCRIPTOR_RULES,
  ) {
    this.defaultTier = core.defaultTier;
    this.defaultEndpointClass = core.defaultEndpointClass;
    this.tiers = core.tiers;
    this.endpointClasses = core.endpointClasses;
    this.customerCeiling = core.customerCeiling;
    this.addressCeiling = core.addressCeiling;
    this.tierCandidates = core.tierCandidates;
    this.customerCeilingCandidates = core.customerCeilingCandidates;
    this.addressCeilingCandidates = core.addressCeilingCandidates;
    this.stagedCandidates = core.stagedCandidates;
    this.matcher = core.matcher;
    this.descriptorMappings = core.descriptorMappings;
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
  const policy = snapshot.policy;
  const overrides = new Map<string, TSnapshotPolicy["customerOverrides"][number][]>();
  const incidents = new Map<string, TSnapshotPolicy["incidentOverrides"][number][]>();
  const push = <T>(map: Map<string, T[]>, key: string, item: T) => {
    const list = map.get(key);
    if (list === undefined) map.set(key, [item]);
    else list.push(item);
  };
  for (const override of policy.customerOverrides) push(overrides, override.customerId, override);
  for (const incident of policy.incidentOverrides) push(incidents, incident.customerId, incident);
  const customers = new Map<string, CustomerRules>();
  for (const customerId of new Set([...overrides.keys(), ...incidents.keys()])) {
    customers.set(
      customerId,
      prepareCustomerRules(
        customerId,
        overrides.get(customerId) ?? [],
        incidents.get(customerId) ?? [],
      ),
    );
  }
  const result = new PreparedSnapshot(
    snapshot.version,
    prepareCore({
      settings: policy,
      tiers: policy.tiers,
      endpointClasses: policy.endpointClasses,
      dryRunCandidates: policy.dryRunCandidates,
    }),
    customers,
    policy.descriptorRules === undefined
      ? NO_DESCRIPTOR_RULES
      : new DescriptorRuleIndex(policy.descriptorRules),
  );
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
    ...(limit.durability === "replicated" ? { durability: "replicated" as const } : {}),
    ...(limit.global === true && limit.algorithm === "token-bucket"
      ? { global: true as const }
      : {}),
  };
}

/**
 * The scopes of the policy's `global` limits (tier limits, per-endpoint tier limits and
 * ceilings marked `global`), sorted: what the reconciler divides among regions and what an
 * enforcer follows a share of. Only enforced ones: a global limit in dry-run or off is not
 * divided.
 */
export function globalLimitScopes(core: PreparedCore): readonly string[] {
  const scopes: string[] = [];
  const add = (rule: PreparedRule | null) => {
    if (rule !== null && rule.global === true && rule.mode === "enforce") scopes.push(rule.scope);
  };
  for (const tierRule of core.tiers.values()) add(tierRule);
  add(core.customerCeiling);
  for (const endpointClass of core.endpointClasses.values()) {
    for (const tierRule of endpointClass.tierRules.values()) add(tierRule);
    add(endpointClass.ceilingRule);
  }
  return scopes.sort();
}

/**
 * {@link globalLimitScopes} of a policy's tiers, endpoint classes and ceilings (the control
 * plane's reconciler reads these entries only, never the per-customer ones).
 */
export function globalLimitScopesOfPolicy(
  policy: Pick<
    TSnapshotPolicy,
    "defaultTier" | "defaultEndpointClass" | "ceilings" | "tiers" | "endpointClasses"
  >,
): readonly string[] {
  return globalLimitScopes(
    prepareCore({
      settings: { ...policy, descriptorMappings: undefined },
      tiers: policy.tiers,
      endpointClasses: policy.endpointClasses,
      dryRunCandidates: [],
    }),
  );
}

/** What {@link prepareCore} indexes: the policy without its per-customer rules. */
export interface PolicyCoreInput {
  readonly settings: Pick<
    TSnapshotPolicy,
    "defaultTier" | "defaultEndpointClass" | "ceilings" | "descriptorMappings"
  >;
  readonly tiers: Iterable<TSnapshotPolicy["tiers"][number]>;
  readonly endpointClasses: Iterable<TSnapshotPolicy["endpointClasses"][number]>;
  readonly dryRunCandidates: Iterable<TSnapshotPolicy["dryRunCandidates"][number]>;
}

/** Indexes tiers, endpoint classes (a segment trie for matching), ceilings and candidates. */
export function prepareCore(input: PolicyCoreInput): PreparedCore {
  const tierList = [...input.tiers];
  const classList = [...input.endpointClasses];
  const tiers = new Map<string, PreparedRule>();
  for (const tier of tierList) {
    tiers.set(
      tier.name,
      rule(formatScope({ kind: "tier", tier: tier.name, endpointClass: null }), "tier", tier.limit),
    );
  }

  const candidates = new Map<string, PreparedCandidate[]>();
  const stagedCandidates: PreparedCandidate[] = [];
  for (const candidate of input.dryRunCandidates) {
    const candidateId = candidate.id;
    const preparedCandidate: PreparedCandidate = {
      id: candidateId,
      scope: formatScope({ kind: "candidate", candidateId }),
      bucket: formatBucket({ kind: "candidate", candidateId }),
      target: candidate.target,
      limit: toLimitSpec(candidate.limit),
      sliceBasisPoints: candidate.sliceBasisPoints ?? null,
      sliceScope: formatScope({ kind: "candidate", candidateId, part: "slice" }),
      slicePreviousScope: formatScope({ kind: "candidate", candidateId, part: "slice-previous" }),
    };
    if (preparedCandidate.sliceBasisPoints !== null) stagedCandidates.push(preparedCandidate);
    const list = candidates.get(candidate.target);
    if (list === undefined) candidates.set(candidate.target, [preparedCandidate]);
    else list.push(preparedCandidate);
  }

  const candidatesFor = (target: string): readonly PreparedCandidate[] =>
    candidates.get(target) ?? NO_CANDIDATES;
  const byTier = (targetOf: (tier: string) => string) => {
    const map = new Map<string, readonly PreparedCandidate[]>();
    for (const tier of tierList) {
      const list = candidates.get(targetOf(tier.name));
      if (list !== undefined) map.set(tier.name, list);
    }
    return map;
  };

  const endpointClasses = new Map<string, PreparedEndpointClass>();
  for (const endpointClass of classList) {
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
  const settings = input.settings;
  const defaultEndpointClass = endpointClasses.get(settings.defaultEndpointClass);
  if (defaultEndpointClass === undefined) {
    throw new TypeError(
      `snapshot's default endpoint class "${settings.defaultEndpointClass}" is not defined`,
    );
  }
  return {
    defaultTier: settings.defaultTier,
    defaultEndpointClass,
    tiers,
    endpointClasses,
    customerCeiling: rule(
      formatScope({ kind: "ceiling", endpointClass: null }),
      "ceiling",
      settings.ceilings.perCustomer,
    ),
    addressCeiling: rule(
      formatScope({ kind: "address", endpointClass: null }),
      "address",
      settings.ceilings.perAddress,
    ),
    tierCandidates: byTier((tier) => formatScope({ kind: "tier", tier, endpointClass: null })),
    customerCeilingCandidates: candidatesFor(formatScope({ kind: "ceiling", endpointClass: null })),
    addressCeilingCandidates: candidatesFor(formatScope({ kind: "address", endpointClass: null })),
    stagedCandidates: stagedCandidates.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)),
    matcher: compileEndpointMatcher(classList),
    descriptorMappings: new Map(
      (settings.descriptorMappings ?? DEFAULT_DESCRIPTOR_MAPPINGS).map((mapping) => [
        mapping.domain,
        mapping,
      ]),
    ),
  };
}

/** One override as the customer's rules need it. */
export interface OverrideRuleInput {
  readonly endpointClass: string | null;
  readonly limit: TPolicyLimit;
}

/** One customer's overrides and incidents, indexed by layer. */
export function prepareCustomerRules(
  customerId: string,
  overrides: Iterable<OverrideRuleInput>,
  incidents: Iterable<TSnapshotPolicy["incidentOverrides"][number]>,
): CustomerRules {
  let account: PreparedRule | null = null;
  const endpoints = new Map<string, PreparedRule>();
  const accountIncidents: PreparedIncident[] = [];
  const endpointIncidents = new Map<string, PreparedIncident[]>();
  for (const override of overrides) {
    const scope = formatScope({
      kind: "customer",
      customerId,
      endpointClass: override.endpointClass,
    });
    const preparedRule = rule(scope, "customer-override", override.limit);
    if (override.endpointClass === null) account = preparedRule;
    else endpoints.set(override.endpointClass, preparedRule);
  }
  for (const incident of incidents) {
    const preparedIncident: PreparedIncident = {
      id: incident.id,
      scope: formatScope({ kind: "incident", incidentId: incident.id }),
      factor: incident.factor,
      limit: incident.limit === null ? null : toLimitSpec(incident.limit),
      startsAt: incident.startsAt,
      expiresAt: incident.expiresAt,
      startsAtMs: Date.parse(incident.startsAt),
      expiresAtMs: Date.parse(incident.expiresAt),
    };
    if (incident.endpointClass === null) {
      accountIncidents.push(preparedIncident);
    } else {
      const list = endpointIncidents.get(incident.endpointClass);
      if (list === undefined) endpointIncidents.set(incident.endpointClass, [preparedIncident]);
      else list.push(preparedIncident);
    }
  }
  return { account, endpoints, accountIncidents, endpointIncidents };
}
