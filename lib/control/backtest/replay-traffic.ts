/**
 * The backtest's replay: recorded requests through the pure limiter core
 * (`decideLayeredBinding` of `@limitplane/enforcer/limiter`, the layered decide without decision
 * objects), at their recorded times and in their recorded order, under the policy in force and
 * under a draft. Pure: no I/O, no clock.
 *
 * Every bucket belongs to one subject (a field of its hash, `rl2:{subject}`; ceilings too), so
 * subjects replay independently: the window is grouped by subject (`groupBySubject`; the loader
 * hands it over in that order already), each group ordered by (time, index in the script call),
 * and replayed from empty buckets at the window's start (the warm-up's start when there is one:
 * its requests are replayed, not counted). Per request nothing is looked up by string: a
 * profile's resolution is cached per (subject, incident epoch) in an array indexed by profile id,
 * and its buckets are small slot numbers into one reused array of states.
 *
 * A subject whose every request resolves to the same checks under both policies cannot decide
 * differently: its outcomes are taken as recorded, under both, without replaying (unless
 * `replayAll`). The others are replayed twice, and the replay of the policy in force is compared
 * with what the store decided: the fidelity.
 */
import {
  decideLayeredBinding,
  LayeredScratch,
  type LimitCheck,
  type LimitSpec,
  type LimitState,
} from "@limitplane/enforcer/limiter";
import {
  type PreparedSnapshot,
  prepareSnapshot,
  type ResolvedCheck,
  resolveLimits,
  type TSnapshot,
} from "@limitplane/enforcer/policy";
import {
  FLAG_ALLOWED,
  FLAG_LOCAL_STAGE,
  FLAG_STORE_TIME,
  FLAG_WITHOUT_STORE,
  NO_BINDING,
  type TrafficProfile,
} from "@limitplane/enforcer/recording";
import { groupBySubject, type TrafficWindow } from "./order-traffic-window";

const MINUTE_MS = 60_000;

export type { TrafficWindow } from "./order-traffic-window";

export interface ReplayOptions {
  /** Counted span: [fromMs, toMs). Requests before `fromMs` are the warm-up: replayed only. */
  readonly fromMs: number;
  readonly toMs: number;
  /** The policy in force. */
  readonly current: TSnapshot;
  /** The policy with the draft applied. */
  readonly draft: TSnapshot;
  /** Replay subjects the draft does not change too (the fidelity of everything). @default false */
  readonly replayAll?: boolean;
  /** How many most-affected customers to return. @default 20 */
  readonly topCustomers?: number;
}

export interface MinuteFigures {
  readonly minuteMs: number;
  readonly recordedAdmitted: number;
  readonly recordedRejected: number;
  readonly nowAdmitted: number;
  readonly nowRejected: number;
  readonly draftAdmitted: number;
  readonly draftRejected: number;
}

export interface AffectedSubject {
  /** `c:<customer>` or `h:<hashed address>`. */
  readonly subject: string;
  readonly customerId: string | null;
  readonly tier: string | null;
  /** Requests in the window (scaled by 1 / sample rate). */
  readonly requests: number;
  /** Admitted now, rejected under the draft. */
  readonly moreRejected: number;
  /** Rejected now, admitted under the draft. */
  readonly moreAdmitted: number;
  /** The scope that bound most often now and under the draft (null: no limit bound). */
  readonly bindingNow: string | null;
  readonly bindingDraft: string | null;
}

export interface TierFigures {
  /** The tier used (null: anonymous traffic). */
  readonly tier: string | null;
  readonly requests: number;
  readonly nowRejected: number;
  readonly draftRejected: number;
  readonly customersAffected: number;
}

export interface ReplayResult {
  readonly minutes: readonly MinuteFigures[];
  readonly totals: {
    readonly requests: number;
    readonly recordedRejected: number;
    readonly nowRejected: number;
    readonly draftRejected: number;
    readonly moreRejected: number;
    readonly moreAdmitted: number;
  };
  readonly byTier: readonly TierFigures[];
  /** Subjects with at least one changed outcome, most changed first. */
  readonly mostAffected: readonly AffectedSubject[];
  readonly subjectsAffected: number;
  readonly customersAffected: number;
  /** Recorded requests in the counted span (unscaled) and those the counts rest on. */
  readonly recordedRequests: number;
  readonly warmUpRequests: number;
  readonly withoutStore: number;
  readonly localStage: number;
  /** Requests replayed under both policies (unscaled). */
  readonly replayedRequests: number;
  /**
   * The replay of the policy in force against what the store decided, over replayed requests the
   * store decided (not without Redis, not by the local stage) under the version in force.
   */
  readonly fidelity: { readonly compared: number; readonly matched: number };
}

interface Resolved {
  /** The resolution's checks, rebuilt in one shape each (`replayChecks`). */
  readonly checks: readonly LimitCheck[];
  /** Per check: the state slot (its key within the subject: route suffix + bucket, interned). */
  readonly slots: Int32Array;
  readonly signature: string;
  readonly tier: string | null;
  readonly cost: number;
}

const signatures = new WeakMap<readonly ResolvedCheck[], string>();

function signatureOf(checks: readonly ResolvedCheck[]): string {
  let signature = signatures.get(checks);
  if (signature === undefined) {
    signature = checks
      .map((c) => `${c.scope}|${c.bucket}|${c.mode}|${JSON.stringify(c.limit)}`)
      .join("\n");
    signatures.set(checks, signature);
  }
  return signature;
}

/**
 * The checks as the core reads them, built here in one shape per algorithm: the policy's limits
 * come from JSON, zod and spreads, objects of many hidden shapes, and the core's hot loop reading
 * them all is many times slower than over one. Same values, so the same decisions.
 */
function replayChecks(checks: readonly ResolvedCheck[]): LimitCheck[] {
  return checks.map((check) => ({
    scope: check.scope,
    bucket: check.bucket ?? check.scope,
    limit: replayLimit(check.limit),
    mode: check.mode,
  }));
}

function replayLimit(limit: LimitSpec): LimitSpec {
  switch (limit.algorithm) {
    case "token-bucket":
      return {
        algorithm: "token-bucket",
        capacity: limit.capacity,
        refillPerSec: limit.refillPerSec,
      };
    case "fixed-window":
      return { algorithm: "fixed-window", limit: limit.limit, windowMs: limit.windowMs };
    case "sliding-log":
      return { algorithm: "sliding-log", limit: limit.limit, windowMs: limit.windowMs };
    case "sliding-window":
      return { algorithm: "sliding-window", limit: limit.limit, windowMs: limit.windowMs };
    case "leaky-meter":
      return { algorithm: "leaky-meter", burst: limit.burst, drainPerSec: limit.drainPerSec };
    default: {
      const unknown: never = limit;
      throw new TypeError(`unknown limit algorithm: ${JSON.stringify(unknown)}`);
    }
  }
}

/** Instants at which some incident starts or stops: resolutions change only there. */
function incidentBoundaries(snapshots: readonly TSnapshot[]): Float64Array {
  const instants = new Set<number>();
  for (const snapshot of snapshots) {
    for (const incident of snapshot.policy.incidentOverrides) {
      instants.add(Date.parse(incident.startsAt));
      instants.add(Date.parse(incident.expiresAt));
    }
  }
  return Float64Array.from([...instants].sort((a, b) => a - b));
}

/** State keys within a subject (route suffix + bucket) as small numbers, shared by both policies. */
class SlotNames {
  readonly #ids = new Map<string, number>();
  idOf(key: string): number {
    let id = this.#ids.get(key);
    if (id === undefined) {
      id = this.#ids.size;
      this.#ids.set(key, id);
    }
    return id;
  }
  get size(): number {
    return this.#ids.size;
  }
}

/**
 * A resolver for one policy, caching per profile for the current (subject, incident epoch): an
 * array indexed by profile id, valid while its stamp matches (`reset` bumps the stamp).
 */
class PolicyResolver {
  readonly #prepared: PreparedSnapshot;
  readonly #profiles: readonly TrafficProfile[];
  readonly #slots: SlotNames;
  readonly #cache: (Resolved | undefined)[];
  readonly #stamps: Uint32Array;
  #stamp = 1;
  constructor(prepared: PreparedSnapshot, profiles: readonly TrafficProfile[], slots: SlotNames) {
    this.#prepared = prepared;
    this.#profiles = profiles;
    this.#slots = slots;
    this.#cache = new Array<Resolved | undefined>(profiles.length);
    this.#stamps = new Uint32Array(profiles.length);
  }
  /** Forget per-subject resolutions (a new subject or a new incident epoch). */
  reset(): void {
    this.#stamp++;
  }
  classCost(endpointClass: string | null): number | null {
    if (endpointClass === null) return null;
    return this.#prepared.endpointClasses.get(endpointClass)?.cost ?? null;
  }
  resolve(subject: string, profileId: number, nowMs: number, currentCost: number | null): Resolved {
    if (this.#stamps[profileId] === this.#stamp) {
      const cached = this.#cache[profileId];
      if (cached !== undefined) return cached;
    }
    const profile = this.#profiles[profileId] as TrafficProfile;
    const isCustomer = subject.startsWith("c:");
    const resolution = resolveLimits(
      this.#prepared,
      {
        customerId: isCustomer ? subject.slice(2) : null,
        tier: isCustomer ? profile.tier : null,
        endpointClass: profile.endpointClass,
        clientAddress: null,
      },
      nowMs,
      { trace: false },
    );
    // The route suffix an anonymous subject's buckets carry (`/endpoint:E` when keyed by route).
    const marker = resolution.subject.lastIndexOf("/endpoint:");
    const suffix = isCustomer || marker === -1 ? "" : resolution.subject.slice(marker);
    // A request charged its class's cost is charged the draft's; a cost the gateway set stays.
    const cost =
      currentCost !== null && profile.cost === currentCost ? resolution.cost : profile.cost;
    const resolved: Resolved = {
      checks: replayChecks(resolution.checks),
      slots: Int32Array.from(resolution.checks, (check) =>
        this.#slots.idOf(`${suffix}\u0000${check.bucket ?? check.scope}`),
      ),
      signature: `${suffix}\u0001${cost}\u0001${signatureOf(resolution.checks)}`,
      tier: resolution.tier,
      cost,
    };
    this.#cache[profileId] = resolved;
    this.#stamps[profileId] = this.#stamp;
    return resolved;
  }
}

/**
 * Where one subject's replay keeps its buckets: one state per slot, and the slots it touched (to
 * empty them for the next subject). Reused across subjects and policies.
 */
class SubjectStates {
  states: (LimitState | undefined)[] = [];
  readonly touched: number[] = [];
  readonly #inputs: (LimitState | undefined)[][] = [];
  readonly #outputs: (LimitState | undefined)[][] = [];
  readonly scratch = new LayeredScratch();
  /** Scratch input and output arrays for `length` checks. */
  inputsFor(length: number): (LimitState | undefined)[] {
    let inputs = this.#inputs[length];
    if (inputs === undefined) {
      inputs = new Array<LimitState | undefined>(length).fill(undefined);
      this.#inputs[length] = inputs;
    }
    return inputs;
  }
  outputsFor(length: number): (LimitState | undefined)[] {
    let outputs = this.#outputs[length];
    if (outputs === undefined) {
      outputs = new Array<LimitState | undefined>(length).fill(undefined);
      this.#outputs[length] = outputs;
    }
    return outputs;
  }
  clear(slotCount: number): void {
    for (const slot of this.touched) this.states[slot] = undefined;
    this.touched.length = 0;
    while (this.states.length < slotCount) this.states.push(undefined);
  }
}

/** One subject's requests through the core under one policy; writes outcomes into `allowed`. */
function replaySubject(
  window: TrafficWindow,
  subject: string,
  indices: Uint32Array,
  resolver: PolicyResolver,
  currentCost: (profileId: number) => number | null,
  boundaries: Float64Array,
  bucketStates: SubjectStates,
  allowed: Uint8Array,
  binding: (string | null)[],
): void {
  resolver.reset();
  const { timeMs, profile } = window;
  const { scratch, touched } = bucketStates;
  let nextBoundary = 0;
  for (let k = 0; k < indices.length; k++) {
    const i = indices[k] as number;
    const t = timeMs[i] as number;
    if (nextBoundary < boundaries.length && t >= (boundaries[nextBoundary] as number)) {
      while (nextBoundary < boundaries.length && t >= (boundaries[nextBoundary] as number)) {
        nextBoundary++;
      }
      resolver.reset();
    }
    const profileId = profile[i] as number;
    const resolved = resolver.resolve(subject, profileId, t, currentCost(profileId));
    const { checks, slots } = resolved;
    const n = checks.length;
    const states = bucketStates.states;
    const inputs = bucketStates.inputsFor(n);
    const outputs = bucketStates.outputsFor(n);
    for (let c = 0; c < n; c++) inputs[c] = states[slots[c] as number];
    const bound = decideLayeredBinding(inputs, checks, t, resolved.cost, outputs, scratch);
    for (let c = 0; c < n; c++) {
      const next = outputs[c];
      if (next !== undefined) {
        const slot = slots[c] as number;
        if (states[slot] === undefined) touched.push(slot);
        states[slot] = next;
      }
    }
    allowed[k] = scratch.isAllowed ? 1 : 0;
    binding[k] = bound === -1 ? null : (checks[bound] as LimitCheck).scope;
  }
}

function mostFrequent(counts: Map<string | null, number>): string | null {
  let best: string | null = null;
  let bestCount = -1;
  for (const [scope, count] of counts) {
    if (count > bestCount) {
      best = scope;
      bestCount = count;
    }
  }
  return best;
}

/** Replays `window` under the policy in force and the draft; see the module comment. */
export function replayTraffic(window: TrafficWindow, options: ReplayOptions): ReplayResult {
  const { fromMs, toMs } = options;
  const minuteCount = Math.max(1, Math.ceil((toMs - fromMs) / MINUTE_MS));
  const fig = {
    recordedAdmitted: new Float64Array(minuteCount),
    recordedRejected: new Float64Array(minuteCount),
    nowAdmitted: new Float64Array(minuteCount),
    nowRejected: new Float64Array(minuteCount),
    draftAdmitted: new Float64Array(minuteCount),
    draftRejected: new Float64Array(minuteCount),
  };
  const slotNames = new SlotNames();
  const current = new PolicyResolver(prepareSnapshot(options.current), window.profiles, slotNames);
  const draft = new PolicyResolver(prepareSnapshot(options.draft), window.profiles, slotNames);
  // Per profile: its class's cost under the policy in force (NaN: none), and whether it was
  // recorded under the version in force (only those take part in the fidelity).
  const classCosts = Float64Array.from(
    window.profiles,
    (profile) => current.classCost(profile.endpointClass) ?? Number.NaN,
  );
  const currentCostOf = (profileId: number): number | null => {
    const cost = classCosts[profileId] as number;
    return Number.isNaN(cost) ? null : cost;
  };
  const currentVersion = options.current.version;
  const isCurrentVersion = Uint8Array.from(window.profiles, (profile) =>
    profile.policyVersion === currentVersion ? 1 : 0,
  );
  const boundaries = incidentBoundaries([options.current, options.draft]);
  const { starts, indices } = groupBySubject(window);
  const { timeMs, profile: profileColumn, flags: flagsColumn, weight } = window;

  const byTier = new Map<
    string | null,
    { requests: number; nowRejected: number; draftRejected: number; customersAffected: number }
  >();
  const affected: AffectedSubject[] = [];
  let recordedRequests = 0;
  let warmUpRequests = 0;
  let withoutStore = 0;
  let localStage = 0;
  let replayedRequests = 0;
  let compared = 0;
  let matched = 0;
  let totalRequests = 0;
  let recordedRejected = 0;
  let nowRejectedTotal = 0;
  let draftRejectedTotal = 0;
  let moreRejectedTotal = 0;
  let moreAdmittedTotal = 0;

  // Per-subject outcome columns, as long as the largest subject's requests; reused.
  let longest = 0;
  for (let s = 0; s < window.subjects.length; s++) {
    longest = Math.max(longest, (starts[s + 1] as number) - (starts[s] as number));
  }
  const nowAllowed = new Uint8Array(longest);
  const draftAllowed = new Uint8Array(longest);
  const nowBinding = new Array<string | null>(longest).fill(null);
  const draftBinding = new Array<string | null>(longest).fill(null);
  const bucketStates = new SubjectStates();
  // Profiles already compared for the current (subject, epoch): `seen[p] === seenStamp`.
  const seen = new Uint32Array(window.profiles.length);
  let seenStamp = 0;

  for (let s = 0; s < window.subjects.length; s++) {
    const group = indices.subarray(starts[s] as number, starts[s + 1] as number);
    if (group.length === 0) continue;
    const subject = window.subjects[s] ?? "";
    // Does the draft change this subject's checks anywhere in the span? Each (profile, incident
    // epoch) is compared once; the tier is the resolution's for the last request looked at.
    let isChanged = options.replayAll === true;
    let tier: string | null = null;
    {
      let epoch = 0;
      current.reset();
      draft.reset();
      seenStamp++;
      let lastProfileId = -1;
      let lastMs = 0;
      for (let k = 0; k < group.length; k++) {
        const i = group[k] as number;
        const t = timeMs[i] as number;
        if (epoch < boundaries.length && t >= (boundaries[epoch] as number)) {
          while (epoch < boundaries.length && t >= (boundaries[epoch] as number)) epoch++;
          current.reset();
          draft.reset();
          seenStamp++;
        }
        const profileId = profileColumn[i] as number;
        lastProfileId = profileId;
        lastMs = t;
        if (seen[profileId] === seenStamp) continue;
        seen[profileId] = seenStamp;
        const cost = currentCostOf(profileId);
        const now = current.resolve(subject, profileId, t, cost);
        if (isChanged) break;
        if (now.signature !== draft.resolve(subject, profileId, t, cost).signature) {
          isChanged = true;
          break;
        }
      }
      // Resolved in this epoch already: a cache hit.
      tier = current.resolve(subject, lastProfileId, lastMs, currentCostOf(lastProfileId)).tier;
    }

    const n = group.length;
    if (isChanged) {
      bucketStates.clear(slotNames.size);
      replaySubject(
        window,
        subject,
        group,
        current,
        currentCostOf,
        boundaries,
        bucketStates,
        nowAllowed,
        nowBinding,
      );
      bucketStates.clear(slotNames.size);
      replaySubject(
        window,
        subject,
        group,
        draft,
        currentCostOf,
        boundaries,
        bucketStates,
        draftAllowed,
        draftBinding,
      );
    }

    let requests = 0;
    let moreRejected = 0;
    let moreAdmitted = 0;
    let nowRejected = 0;
    let draftRejected = 0;
    const bindNow = new Map<string | null, number>();
    const bindDraft = new Map<string | null, number>();
    for (let k = 0; k < n; k++) {
      const i = group[k] as number;
      const t = timeMs[i] as number;
      if (t < fromMs) {
        warmUpRequests++;
        continue;
      }
      if (t >= toMs) continue;
      const w = weight[i] as number;
      const flags = flagsColumn[i] as number;
      const isRecordedAllowed = (flags & FLAG_ALLOWED) !== 0;
      recordedRequests++;
      if ((flags & FLAG_WITHOUT_STORE) !== 0) withoutStore++;
      if ((flags & FLAG_LOCAL_STAGE) !== 0) localStage++;
      const minute = Math.floor((t - fromMs) / MINUTE_MS);
      requests += w;
      if (isRecordedAllowed)
        fig.recordedAdmitted[minute] = (fig.recordedAdmitted[minute] as number) + w;
      else {
        fig.recordedRejected[minute] = (fig.recordedRejected[minute] as number) + w;
        recordedRejected += w;
      }
      // A subject the draft does not change keeps its recorded outcomes under both.
      const a = isChanged ? nowAllowed[k] === 1 : isRecordedAllowed;
      const b = isChanged ? draftAllowed[k] === 1 : isRecordedAllowed;
      if (a) fig.nowAdmitted[minute] = (fig.nowAdmitted[minute] as number) + w;
      else {
        fig.nowRejected[minute] = (fig.nowRejected[minute] as number) + w;
        nowRejected += w;
      }
      if (b) fig.draftAdmitted[minute] = (fig.draftAdmitted[minute] as number) + w;
      else {
        fig.draftRejected[minute] = (fig.draftRejected[minute] as number) + w;
        draftRejected += w;
      }
      if (a && !b) moreRejected += w;
      if (!a && b) moreAdmitted += w;
      if (isChanged) {
        replayedRequests++;
        const nb = nowBinding[k] ?? null;
        const db = draftBinding[k] ?? null;
        bindNow.set(nb, (bindNow.get(nb) ?? 0) + 1);
        bindDraft.set(db, (bindDraft.get(db) ?? 0) + 1);
        const profileId = profileColumn[i] as number;
        const isStoreDecided =
          (flags & FLAG_STORE_TIME) !== 0 &&
          (flags & (FLAG_WITHOUT_STORE | FLAG_LOCAL_STAGE)) === 0;
        if (isStoreDecided && isCurrentVersion[profileId] === 1) {
          compared++;
          const recordedBinding = window.binding[i] ?? NO_BINDING;
          const recordedScope =
            recordedBinding === NO_BINDING
              ? null
              : (window.profiles[profileId]?.scopes[recordedBinding] ?? null);
          if (a === isRecordedAllowed && nb === recordedScope) matched++;
        }
      }
    }
    totalRequests += requests;
    nowRejectedTotal += nowRejected;
    draftRejectedTotal += draftRejected;
    moreRejectedTotal += moreRejected;
    moreAdmittedTotal += moreAdmitted;
    const tierFigures = byTier.get(tier) ?? {
      requests: 0,
      nowRejected: 0,
      draftRejected: 0,
      customersAffected: 0,
    };
    tierFigures.requests += requests;
    tierFigures.nowRejected += nowRejected;
    tierFigures.draftRejected += draftRejected;
    if (moreRejected + moreAdmitted > 0) {
      if (subject.startsWith("c:")) tierFigures.customersAffected++;
      affected.push({
        subject,
        customerId: subject.startsWith("c:") ? subject.slice(2) : null,
        tier,
        requests,
        moreRejected,
        moreAdmitted,
        bindingNow: mostFrequent(bindNow),
        bindingDraft: mostFrequent(bindDraft),
      });
    }
    byTier.set(tier, tierFigures);
  }

  affected.sort(
    (x, y) =>
      y.moreRejected + y.moreAdmitted - (x.moreRejected + x.moreAdmitted) ||
      (x.subject < y.subject ? -1 : 1),
  );
  const minutes: MinuteFigures[] = [];
  for (let m = 0; m < minuteCount; m++) {
    minutes.push({
      minuteMs: fromMs + m * MINUTE_MS,
      recordedAdmitted: fig.recordedAdmitted[m] ?? 0,
      recordedRejected: fig.recordedRejected[m] ?? 0,
      nowAdmitted: fig.nowAdmitted[m] ?? 0,
      nowRejected: fig.nowRejected[m] ?? 0,
      draftAdmitted: fig.draftAdmitted[m] ?? 0,
      draftRejected: fig.draftRejected[m] ?? 0,
    });
  }
  return {
    minutes,
    totals: {
      requests: totalRequests,
      recordedRejected,
      nowRejected: nowRejectedTotal,
      draftRejected: draftRejectedTotal,
      moreRejected: moreRejectedTotal,
      moreAdmitted: moreAdmittedTotal,
    },
    byTier: [...byTier.entries()]
      .map(([tier, figures]) => ({ tier, ...figures }))
      .sort((x, y) => (x.tier ?? "~").localeCompare(y.tier ?? "~")),
    mostAffected: affected.slice(0, options.topCustomers ?? 20),
    subjectsAffected: affected.length,
    customersAffected: affected.filter((a) => a.customerId !== null).length,
    recordedRequests,
    warmUpRequests,
    withoutStore,
    localStage,
    replayedRequests,
    fidelity: { compared, matched },
  };
}
