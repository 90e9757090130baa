/**
 * Resolution: which limits a request is checked against, as a pure function of the snapshot, the
 * request and the wall-clock time. For customer C of tier T on endpoint class E at time t:
 *
 *   layer     bucket               starts as                       replaced by, most specific last
 *   account   account              tier:T                          customer:C, then an active incident on all endpoints
 *   endpoint  endpoint:E           tier:T/endpoint:E, if any       customer:C/endpoint:E, then an active incident on E
 *   ceiling   ceiling              ceiling                         never replaced
 *   ceiling   ceiling/endpoint:E   ceiling/endpoint:E, if any      never replaced
 *
 * An anonymous request (no customer) is keyed by its client address and has no tier and no
 * overrides: endpoint `address/endpoint:E`, ceilings `address` (the per-address ceiling) and
 * `ceiling/endpoint:E`.
 *
 * Every resulting limit is checked; the request needs all of them. Within a layer:
 * - a rule with mode `off` is skipped, as if absent (the layer falls back to the rule below it);
 * - the most specific rule in mode `enforce` applies, as an enforced check on the layer's bucket,
 *   so replacing a tier limit by an override continues the same bucket;
 * - an incident applies iff `startsAt <= t < expiresAt`; with several active, the latest started
 *   applies. A factor scales the enforced rule it replaces (and needs one); the incident keeps that
 *   rule's failure policy;
 * - a rule in mode `dry-run` that nothing enforced outranks is checked in dry-run on its own bucket
 *   (`dry-run/<scope>`), next to what is enforced;
 * - a dry-run candidate is checked in dry-run on its own bucket (`candidate:ID`) wherever the rule
 *   it targets would be the one that applies: not for a customer whose override or incident
 *   outranks that rule, since promoting the candidate would not change that customer's limit.
 * - a candidate that is a staged change (`sliceBasisPoints`) does the same for subjects outside its
 *   slice. For a subject in the slice (`staged-slice.ts`), wherever the candidate would be
 *   counted, its limit is enforced instead on the layer's bucket (`candidate:ID/slice`), so the
 *   bucket continues as on an edit, and the rule it replaces is counted in dry-run on the
 *   candidate's bucket (`candidate:ID/slice-previous`): both limits are counted for everyone.
 */
import { normalizeClientAddress } from "./address";
import type { MatchRule } from "./endpoint-matcher";
import { describeLimit, scaleLimit } from "./limit-math";
import {
  type CustomerRules,
  type PreparedCandidate,
  type PreparedEndpointClass,
  type PreparedIncident,
  type PreparedRule,
  PreparedSnapshot,
  prepareSnapshot,
} from "./prepare";
import type {
  CachedResolution,
  Layer,
  ResolvedCheck,
  TraceLimit,
  TraceRule,
  TraceSlot,
  TraceStatus,
} from "./resolution-types";
import type { TOnStoreFailure, TSnapshot } from "./schemas";
import { formatSubject } from "./scope";
import { isInSlice } from "./staged-slice";

export type { ResolvedCheck, TraceRule, TraceSlot, TraceStatus } from "./resolution-types";

/** What the gateway knows about a request. */
export interface ResolveRequest {
  /** The authenticated customer; absent or null for anonymous traffic. */
  readonly customerId?: string | null;
  /** The tier the gateway authenticated; absent, null or unknown means the policy's default tier. */
  readonly tier?: string | null;
  /** The endpoint class, when the gateway knows it; otherwise `method` and `path` are matched. */
  readonly endpointClass?: string | null;
  /** HTTP method. @default "GET" */
  readonly method?: string | null;
  /** Request target: path, optionally with a query (ignored). */
  readonly path?: string | null;
  /** The client's IP address, as the gateway determined it. Keys anonymous traffic. */
  readonly clientAddress?: string | null;
}

/** Options of {@link resolveLimits}. */
export interface ResolveOptions {
  /**
   * Build the trace. An enforcer deciding requests passes false: the checks are the same.
   * @default true
   */
  readonly trace?: boolean;
}

/** How a resolution came about, for the console's explain view, the API and tests. */
export interface ResolutionTrace {
  readonly nowMs: number;
  readonly subject: string;
  /** Null for anonymous requests. */
  readonly tier: {
    readonly requested: string | null;
    readonly used: string;
    readonly isFallback: boolean;
  } | null;
  readonly endpointClass: {
    readonly requested: string | null;
    readonly used: string;
    /** `request`: named by the gateway; `match`: a match rule; `default`: nothing matched. */
    readonly via: "request" | "match" | "default";
    readonly rule: MatchRule | null;
  };
  readonly slots: readonly TraceSlot[];
  /** Fallbacks and substitutions, in words. */
  readonly notes: readonly string[];
}

/** The limits a request is checked against. */
export interface Resolution {
  /** Whose buckets the checks use: `c:<customer>`, `a:<address>`, `a:<address>/endpoint:E`. */
  readonly subject: string;
  readonly subjectKind: "customer" | "address";
  /** The tier used, or null for anonymous requests. */
  readonly tier: string | null;
  readonly endpointClass: string;
  /** The endpoint class's cost per request. */
  readonly cost: number;
  /** Enforced checks and dry-run checks, layer by layer (account, endpoint, ceilings). */
  readonly checks: readonly ResolvedCheck[];
  /** Null when `options.trace` is false. */
  readonly trace: ResolutionTrace | null;
}

/**
 * The checks for `request` under `snapshot` at wall-clock time `nowMs`. Pure: no clock is read and
 * nothing is mutated except the prepared snapshot's internal cache.
 *
 * Pass a {@link PreparedSnapshot} on the hot path; a plain snapshot is prepared on first use and
 * cached. Throws a TypeError on a customer id outside the id character set or a non-finite
 * `nowMs`: both are mistakes of the calling code, which validates at its own boundary.
 */
export function resolveLimits(
  snapshot: TSnapshot | PreparedSnapshot,
  request: ResolveRequest,
  nowMs: number,
  options: ResolveOptions = {},
): Resolution {
  if (!Number.isFinite(nowMs)) throw new TypeError(`nowMs must be a finite number, not ${nowMs}`);
  const prepared = snapshot instanceof PreparedSnapshot ? snapshot : prepareSnapshot(snapshot);
  const withTrace = options.trace ?? true;
  const notes: string[] = [];
  const { endpointClass, endpointTrace } = resolveEndpointClass(prepared, request, notes);

  const customerId = request.customerId ?? null;
  if (customerId === null) {
    if (request.tier !== undefined && request.tier !== null) {
      notes.push(`tier "${request.tier}" was given without a customer; the request is anonymous`);
    }
    const normalized = request.clientAddress ? normalizeClientAddress(request.clientAddress) : null;
    if (normalized === null) {
      notes.push(
        request.clientAddress
          ? `client address ${JSON.stringify(request.clientAddress)} is not an IP address; keyed as "unknown"`
          : 'no client address was given; keyed as "unknown"',
      );
    }
    const subject = formatSubject({
      kind: "address",
      address: normalized ?? "unknown",
      endpointClass: endpointClass.keyBy === "address-and-route" ? endpointClass.name : null,
    });
    const slices = sliceMembership(prepared, normalized ?? "unknown");
    const cacheKey = `a\u0000${endpointClass.name}${slices.key}`;
    let cached = prepared.cache.get(cacheKey);
    if (cached === undefined) {
      cached = freezeResolution(
        resolveAnonymousSlots(prepared, endpointClass, slices.inSlice, nowMs, true),
      );
      prepared.cache.set(cacheKey, cached);
    }
    return {
      subject,
      subjectKind: "address",
      tier: null,
      endpointClass: endpointClass.name,
      cost: endpointClass.cost,
      checks: cached.checks,
      trace: withTrace
        ? { nowMs, subject, tier: null, endpointClass: endpointTrace, slots: cached.slots, notes }
        : null,
    };
  }

  const requestedTier = request.tier ?? null;
  let tier = requestedTier ?? prepared.defaultTier;
  if (!prepared.tiers.has(tier)) {
    notes.push(`tier "${tier}" is not defined; using the default tier "${prepared.defaultTier}"`);
    tier = prepared.defaultTier;
  } else if (requestedTier === null) {
    notes.push(`no tier was given; using the default tier "${prepared.defaultTier}"`);
  }
  // Throws on a customer id outside its character set.
  const subject = formatSubject({ kind: "customer", customerId });
  const customerRules = prepared.customers.get(customerId);
  const slices = sliceMembership(prepared, customerId);
  let result: CachedResolution;
  if (customerRules === undefined) {
    const cacheKey = `c\u0000${tier}\u0000${endpointClass.name}${slices.key}`;
    const cached = prepared.cache.get(cacheKey);
    if (cached === undefined) {
      result = freezeResolution(
        resolveCustomerSlots(prepared, tier, endpointClass, undefined, slices.inSlice, nowMs, true),
      );
      prepared.cache.set(cacheKey, result);
    } else {
      result = cached;
    }
  } else {
    result = resolveCustomerSlots(
      prepared,
      tier,
      endpointClass,
      customerRules,
      slices.inSlice,
      nowMs,
      withTrace,
    );
  }
  return {
    subject,
    subjectKind: "customer",
    tier,
    endpointClass: endpointClass.name,
    cost: endpointClass.cost,
    checks: result.checks,
    trace: withTrace
      ? {
          nowMs,
          subject,
          tier: { requested: requestedTier, used: tier, isFallback: tier !== requestedTier },
          endpointClass: endpointTrace,
          slots: result.slots,
          notes,
        }
      : null,
  };
}

function resolveEndpointClass(
  prepared: PreparedSnapshot,
  request: ResolveRequest,
  notes: string[],
): { endpointClass: PreparedEndpointClass; endpointTrace: ResolutionTrace["endpointClass"] } {
  const requested = request.endpointClass ?? null;
  if (requested !== null) {
    const named = prepared.endpointClasses.get(requested);
    if (named !== undefined) {
      return {
        endpointClass: named,
        endpointTrace: { requested, used: named.name, via: "request", rule: null },
      };
    }
    notes.push(`endpoint class "${requested}" is not defined; matching the request instead`);
  }
  if (request.path !== undefined && request.path !== null) {
    const method = request.method ?? "GET";
    const match = prepared.matcher.match(method, request.path);
    const matched = match === null ? undefined : prepared.endpointClasses.get(match.endpointClass);
    if (match !== null && matched !== undefined) {
      return {
        endpointClass: matched,
        endpointTrace: { requested, used: matched.name, via: "match", rule: match.rule },
      };
    }
    notes.push(
      `no match rule matches ${method.toUpperCase()} ${request.path}; using the default endpoint class "${prepared.defaultEndpointClass.name}"`,
    );
  } else if (requested === null) {
    notes.push(
      `no endpoint class or path was given; using the default endpoint class "${prepared.defaultEndpointClass.name}"`,
    );
  }
  const fallback = prepared.defaultEndpointClass;
  return {
    endpointClass: fallback,
    endpointTrace: { requested, used: fallback.name, via: "default", rule: null },
  };
}

/** Which staged changes' slices hold a subject: a cache-key suffix and the candidate ids. */
interface SliceMembership {
  readonly key: string;
  readonly inSlice: ReadonlySet<string>;
}

const NO_SLICES: SliceMembership = { key: "", inSlice: new Set() };

/**
 * The staged changes whose slice holds `identity`. Without staged changes (the usual case) this
 * costs nothing; with k of them, k hashes, and the shared per-tier results are kept per
 * membership pattern (at most 2^k of them, and k is bounded by the document's rules).
 */
function sliceMembership(prepared: PreparedSnapshot, identity: string): SliceMembership {
  const staged = prepared.stagedCandidates;
  if (staged.length === 0) return NO_SLICES;
  let key = "\u0000";
  const inSlice = new Set<string>();
  for (const candidate of staged) {
    if (isInSlice(candidate.id, identity, candidate.sliceBasisPoints ?? 0)) {
      inSlice.add(candidate.id);
      key += "1";
    } else {
      key += "0";
    }
  }
  return { key, inSlice };
}

interface SlotInput {
  readonly layer: Layer;
  readonly bucket: string;
  /** The failure policy of an incident that replaces nothing. */
  readonly defaultOnStoreFailure: TOnStoreFailure;
  readonly base: PreparedRule | null;
  readonly override: PreparedRule | null;
  readonly incidents: readonly PreparedIncident[];
  readonly candidates: readonly PreparedCandidate[];
}

const NO_INCIDENTS: readonly PreparedIncident[] = [];
const NO_CANDIDATES: readonly PreparedCandidate[] = [];

function resolveCustomerSlots(
  prepared: PreparedSnapshot,
  tier: string,
  endpointClass: PreparedEndpointClass,
  customer: CustomerRules | undefined,
  inSlice: ReadonlySet<string>,
  nowMs: number,
  withTrace: boolean,
): CachedResolution {
  const tierRule = prepared.tiers.get(tier) ?? null;
  const endpointTierRule = endpointClass.tierRules.get(tier) ?? null;
  return resolveSlots(
    [
      {
        layer: "account",
        bucket: "account",
        defaultOnStoreFailure: "open",
        base: tierRule,
        override: customer?.account ?? null,
        incidents: customer?.accountIncidents ?? NO_INCIDENTS,
        candidates: prepared.tierCandidates.get(tier) ?? NO_CANDIDATES,
      },
      {
        layer: "endpoint",
        bucket: endpointClass.endpointBucket,
        defaultOnStoreFailure: "open",
        base: endpointTierRule,
        override: customer?.endpoints.get(endpointClass.name) ?? null,
        incidents: customer?.endpointIncidents.get(endpointClass.name) ?? NO_INCIDENTS,
        candidates: endpointClass.tierCandidates.get(tier) ?? NO_CANDIDATES,
      },
      ceilingSlot(prepared.customerCeiling, prepared.customerCeilingCandidates),
      endpointCeilingSlot(endpointClass),
    ],
    inSlice,
    nowMs,
    withTrace,
  );
}

function resolveAnonymousSlots(
  prepared: PreparedSnapshot,
  endpointClass: PreparedEndpointClass,
  inSlice: ReadonlySet<string>,
  nowMs: number,
  withTrace: boolean,
): CachedResolution {
  return resolveSlots(
    [
      {
        layer: "account",
        bucket: "account",
        defaultOnStoreFailure: "open",
        base: null,
        override: null,
        incidents: NO_INCIDENTS,
        candidates: NO_CANDIDATES,
      },
      {
        layer: "endpoint",
        bucket: endpointClass.endpointBucket,
        defaultOnStoreFailure: "closed",
        base: endpointClass.anonymousRule,
        override: null,
        incidents: NO_INCIDENTS,
        candidates: endpointClass.anonymousCandidates,
      },
      ceilingSlot(prepared.addressCeiling, prepared.addressCeilingCandidates),
      endpointCeilingSlot(endpointClass),
    ],
    inSlice,
    nowMs,
    withTrace,
  );
}

function ceilingSlot(ceiling: PreparedRule, candidates: readonly PreparedCandidate[]): SlotInput {
  return {
    layer: "ceiling",
    bucket: "ceiling",
    defaultOnStoreFailure: ceiling.onStoreFailure,
    base: ceiling,
    override: null,
    incidents: NO_INCIDENTS,
    candidates,
  };
}

function endpointCeilingSlot(endpointClass: PreparedEndpointClass): SlotInput {
  return {
    layer: "ceiling",
    bucket: endpointClass.ceilingBucket,
    defaultOnStoreFailure: "local",
    base: endpointClass.ceilingRule,
    override: null,
    incidents: NO_INCIDENTS,
    candidates: endpointClass.ceilingCandidates,
  };
}

function resolveSlots(
  inputs: readonly SlotInput[],
  inSlice: ReadonlySet<string>,
  nowMs: number,
  withTrace: boolean,
): CachedResolution {
  const checks: ResolvedCheck[] = [];
  const slots: TraceSlot[] = [];
  for (const input of inputs) {
    const slot = resolveSlot(input, inSlice, nowMs, checks, withTrace);
    if (slot !== null) slots.push(slot);
  }
  return { checks, slots };
}

/** What decides a layer: an enforced rule, or an active incident standing in for one. */
interface Applying {
  readonly scope: string;
  readonly limit: TraceLimit;
  readonly onStoreFailure: TOnStoreFailure;
  /** The enforced rule's durability: an incident keeps the limit's, as its failure policy. */
  readonly durability: "replicated" | undefined;
  /** The rule itself, or the incident. */
  readonly origin: PreparedRule | PreparedIncident;
}

/** Resolves one layer's bucket: pushes its checks and returns its trace (null without trace). */
function resolveSlot(
  input: SlotInput,
  inSlice: ReadonlySet<string>,
  nowMs: number,
  checks: ResolvedCheck[],
  withTrace: boolean,
): TraceSlot | null {
  const rules: PreparedRule[] = [];
  if (input.base !== null) rules.push(input.base);
  if (input.override !== null) rules.push(input.override);

  // The most specific enforced rule: what an incident replaces, and what applies without one.
  let enforcedIndex = -1;
  rules.forEach((rule, index) => {
    if (rule.mode === "enforce") enforcedIndex = index;
  });
  const enforced = rules[enforcedIndex] ?? null;

  // The live incident: active now, and the latest started among the active ones.
  let live: PreparedIncident | null = null;
  for (const incident of input.incidents) {
    if (!isActive(incident, nowMs)) continue;
    if (
      live === null ||
      incident.startsAtMs > live.startsAtMs ||
      (incident.startsAtMs === live.startsAtMs && incident.id > live.id)
    ) {
      live = incident;
    }
  }

  let applying: Applying | null =
    enforced === null
      ? null
      : {
          scope: enforced.scope,
          limit: enforced.limit,
          onStoreFailure: enforced.onStoreFailure,
          durability: enforced.durability,
          origin: enforced,
        };
  let isLiveScalable = true;
  if (live !== null) {
    if (live.factor !== null) {
      if (enforced === null) isLiveScalable = false;
      else {
        applying = {
          scope: live.scope,
          limit: scaleLimit(enforced.limit, live.factor),
          onStoreFailure: enforced.onStoreFailure,
          durability: enforced.durability,
          origin: live,
        };
      }
    } else if (live.limit !== null) {
      applying = {
        scope: live.scope,
        limit: live.limit,
        onStoreFailure: enforced?.onStoreFailure ?? input.defaultOnStoreFailure,
        durability: enforced?.durability,
        origin: live,
      };
    }
  }

  // A candidate stands in for the base rule: it counts when nothing more specific applies.
  const isCandidateCounted = applying === null || applying.origin === input.base;
  // A staged change whose slice holds the subject: its limit is enforced in the base rule's place.
  let staged: PreparedCandidate | null = null;
  if (isCandidateCounted && inSlice.size > 0) {
    for (const candidate of input.candidates) {
      if (candidate.sliceBasisPoints !== null && inSlice.has(candidate.id)) staged = candidate;
    }
  }
  if (staged !== null) {
    checks.push({
      scope: staged.sliceScope,
      bucket: input.bucket,
      limit: staged.limit,
      mode: "enforce",
      layer: input.layer,
      onStoreFailure: applying?.onStoreFailure ?? input.defaultOnStoreFailure,
      ...(applying?.durability === "replicated" ? { durability: "replicated" as const } : {}),
    });
    if (applying !== null) {
      checks.push({
        scope: staged.slicePreviousScope,
        bucket: staged.bucket,
        limit: applying.limit,
        mode: "dry-run",
        layer: input.layer,
        onStoreFailure: "open",
      });
    }
  } else if (applying !== null) {
    checks.push({
      scope: applying.scope,
      bucket: input.bucket,
      limit: applying.limit,
      mode: "enforce",
      layer: input.layer,
      onStoreFailure: applying.onStoreFailure,
      ...(applying.durability === "replicated" ? { durability: "replicated" as const } : {}),
      // An incident standing in for a global limit is enforced per region while it runs.
      ...(applying.origin === enforced && enforced.global === true
        ? { global: true as const }
        : {}),
    });
  }
  // A rule in dry-run counts when nothing enforced outranks it: when nothing applies, or when it
  // is more specific than the rule that applies (an incident outranks every rule).
  const isIncidentApplying = applying !== null && applying.origin !== enforced;
  const appliesIndex = isIncidentApplying ? rules.length : enforcedIndex;
  const isDryRunCounted = (index: number) => index > appliesIndex;
  for (let index = rules.length - 1; index >= 0; index--) {
    const rule = rules[index];
    if (rule === undefined || rule.mode !== "dry-run" || !isDryRunCounted(index)) continue;
    checks.push({
      scope: rule.scope,
      bucket: rule.dryRunBucket,
      limit: rule.limit,
      mode: "dry-run",
      layer: input.layer,
      onStoreFailure: "open",
    });
  }
  if (isCandidateCounted) {
    for (const candidate of input.candidates) {
      if (candidate === staged) continue;
      checks.push({
        scope: candidate.scope,
        bucket: candidate.bucket,
        limit: candidate.limit,
        mode: "dry-run",
        layer: input.layer,
        onStoreFailure: "open",
      });
    }
  }

  if (!withTrace) return null;

  const by = staged?.sliceScope ?? applying?.scope ?? null;
  const traced: TraceRule[] = [];
  rules.forEach((rule, index) => {
    let status: TraceStatus;
    if (rule.mode === "off") status = "off";
    else if (applying !== null && applying.origin === rule && staged === null) status = "applies";
    else if (rule.mode === "dry-run" && isDryRunCounted(index)) status = "dry-run";
    else status = "replaced";
    traced.push({
      scope: rule.scope,
      source: rule.source,
      status,
      limit: rule.limit,
      mode: rule.mode,
      by: status === "replaced" ? by : null,
      incident: null,
      target: null,
    });
  });
  const incidents = [...input.incidents].sort(
    (a, b) => a.startsAtMs - b.startsAtMs || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0),
  );
  for (const incident of incidents) {
    let status: TraceStatus;
    if (nowMs < incident.startsAtMs) status = "not-started";
    else if (nowMs >= incident.expiresAtMs) status = "expired";
    else if (incident !== live) status = "superseded";
    else status = isLiveScalable ? "applies" : "nothing-to-scale";
    let limit: TraceLimit | null = incident.limit;
    if (incident.factor !== null)
      limit = enforced === null ? null : scaleLimit(enforced.limit, incident.factor);
    traced.push({
      scope: incident.scope,
      source: "incident-override",
      status,
      limit,
      mode: "enforce",
      by: status === "superseded" ? (live?.scope ?? null) : null,
      incident: {
        factor: incident.factor,
        startsAt: incident.startsAt,
        expiresAt: incident.expiresAt,
      },
      target: null,
    });
  }
  for (const candidate of input.candidates) {
    if (candidate === staged) {
      traced.push({
        scope: candidate.sliceScope,
        source: "candidate",
        status: "applies",
        limit: candidate.limit,
        mode: "enforce",
        by: null,
        incident: null,
        target: candidate.target,
      });
      continue;
    }
    traced.push({
      scope: candidate.scope,
      source: "candidate",
      status: isCandidateCounted ? "dry-run" : "replaced",
      limit: candidate.limit,
      mode: "dry-run",
      by: isCandidateCounted ? null : by,
      incident: null,
      target: candidate.target,
    });
  }
  return { layer: input.layer, bucket: input.bucket, rules: traced };
}

function isActive(incident: PreparedIncident, nowMs: number): boolean {
  return incident.startsAtMs <= nowMs && nowMs < incident.expiresAtMs;
}

function freezeResolution(resolution: CachedResolution): CachedResolution {
  for (const check of resolution.checks) Object.freeze(check);
  for (const slot of resolution.slots) {
    for (const rule of slot.rules) Object.freeze(rule);
    Object.freeze(slot.rules);
    Object.freeze(slot);
  }
  return Object.freeze({
    checks: Object.freeze(resolution.checks),
    slots: Object.freeze(resolution.slots),
  });
}

/**
 * The trace in words, one line per layer and rule, for logs, the command line and test failure
 * messages. Example:
 *
 *   account (bucket account):
 *     tier:pro  token-bucket 200 burst, 50/s  replaced by customer:acme
 *     customer:acme  token-bucket 1000 burst, 200/s  applies
 */
export function explainTrace(trace: ResolutionTrace): string[] {
  const lines: string[] = [`subject ${trace.subject} at ${new Date(trace.nowMs).toISOString()}`];
  for (const note of trace.notes) lines.push(`note: ${note}`);
  for (const slot of trace.slots) {
    lines.push(
      `${slot.layer} (bucket ${slot.bucket}):${slot.rules.length === 0 ? " no limit" : ""}`,
    );
    for (const rule of slot.rules) {
      const limit = rule.limit === null ? "no limit" : describeLimit(rule.limit);
      const status = rule.by === null ? rule.status : `${rule.status} by ${rule.by}`;
      const window =
        rule.incident === null ? "" : ` [${rule.incident.startsAt} to ${rule.incident.expiresAt}]`;
      const factor = rule.incident?.factor == null ? "" : ` x${rule.incident.factor}`;
      lines.push(`  ${rule.scope}${factor}${window}  ${limit}  ${status}`);
    }
  }
  return lines;
}
