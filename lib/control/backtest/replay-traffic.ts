/**
 * The backtest's replay: recorded requests through the pure limiter core
 * (`decideLayeredInto` of `@limitplane/enforcer/limiter`), at their recorded times and in their
 * recorded order, under the policy in force and under a draft. Pure: no I/O, no clock.
 *
 * Every bucket belongs to one subject (`rl:{subject}:bucket`; ceilings too), so subjects replay
 * independently: the window is grouped by subject (a counting sort), each group ordered by
 * (time, index in the script call), and replayed from empty buckets at the window's start (the
 * warm-up's start when there is one: its requests are replayed, not counted).
 *
 * A subject whose every request resolves to the same checks under both policies cannot decide
 * differently: its outcomes are taken as recorded, under both, without replaying (unless
 * `replayAll`). The others are replayed twice, and the replay of the policy in force is compared
 * with what the store decided: the fidelity.
 */
import { decideLayered, type LimitState } from "@limitplane/enforcer/limiter";
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

const MINUTE_MS = 60_000;

/** A loaded window of the record, columnar (see `load-traffic-window.ts`). */
export interface TrafficWindow {
  readonly count: number;
  readonly subjects: readonly string[];
  readonly profiles: readonly TrafficProfile[];
  readonly timeMs: Float64Array;
  readonly subject: Uint32Array;
  readonly profile: Uint32Array;
  readonly order: Uint16Array;
  readonly flags: Uint8Array;
  readonly binding: Uint8Array;
  /** 1 / the sample rate each request was recorded at. */
  readonly weight: Float32Array;
}

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
  readonly checks: readonly ResolvedCheck[];
  /** Per check: the state key within the subject (route suffix + bucket). */
  readonly keys: readonly string[];
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

/** A resolver for one policy, caching per (subject, profile, incident epoch). */
class PolicyResolver {
  readonly #prepared: PreparedSnapshot;
  readonly #profiles: readonly TrafficProfile[];
  #cache = new Map<number, Resolved>();
  constructor(prepared: PreparedSnapshot, profiles: readonly TrafficProfile[]) {
    this.#prepared = prepared;
    this.#profiles = profiles;
  }
  /** Forget per-subject resolutions (a new subject or a new incident epoch). */
  reset(): void {
    this.#cache = new Map();
  }
  classCost(endpointClass: string | null): number | null {
    if (endpointClass === null) return null;
    return this.#prepared.endpointClasses.get(endpointClass)?.cost ?? null;
  }
  resolve(subject: string, profileId: number, nowMs: number, currentCost: number | null): Resolved {
    let resolved = this.#cache.get(profileId);
    if (resolved !== undefined) return resolved;
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
    resolved = {
      checks: resolution.checks,
      keys: resolution.checks.map((check) => `${suffix}\u0000${check.bucket ?? check.scope}`),
      signature: `${suffix}\u0001${cost}\u0001${signatureOf(resolution.checks)}`,
      tier: resolution.tier,
      cost,
    };
    this.#cache.set(profileId, resolved);
    return resolved;
  }
}

/** Per subject, the indices of its requests ordered by (time, index in call). */
function groupBySubject(window: TrafficWindow): { starts: Uint32Array; indices: Uint32Array } {
  const nSubjects = window.subjects.length;
  const starts = new Uint32Array(nSubjects + 1);
  for (let i = 0; i < window.count; i++) {
    const at = (window.subject[i] ?? 0) + 1;
    starts[at] = (starts[at] ?? 0) + 1;
  }
  for (let s = 0; s < nSubjects; s++) starts[s + 1] = (starts[s + 1] ?? 0) + (starts[s] ?? 0);
  const fill = starts.slice(0, nSubjects);
  const indices = new Uint32Array(window.count);
  for (let i = 0; i < window.count; i++) {
    const s = window.subject[i] ?? 0;
    indices[fill[s] ?? 0] = i;
    fill[s] = (fill[s] ?? 0) + 1;
  }
  const { timeMs, order } = window;
  for (let s = 0; s < nSubjects; s++) {
    const from = starts[s] ?? 0;
    const to = starts[s + 1] ?? 0;
    let isSorted = true;
    for (let k = from + 1; k < to; k++) {
      const a = indices[k - 1] ?? 0;
      const b = indices[k] ?? 0;
      const ta = timeMs[a] ?? 0;
      const tb = timeMs[b] ?? 0;
      if (ta > tb || (ta === tb && (order[a] ?? 0) > (order[b] ?? 0))) {
        isSorted = false;
        break;
      }
    }
    if (!isSorted) {
      indices
        .subarray(from, to)
        .sort((a, b) => (timeMs[a] ?? 0) - (timeMs[b] ?? 0) || (order[a] ?? 0) - (order[b] ?? 0));
    }
  }
  return { starts, indices };
}

/** One subject's requests through the core under one policy; writes outcomes into `allowed`. */
function replaySubject(
  window: TrafficWindow,
  subject: string,
  indices: Uint32Array,
  resolver: PolicyResolver,
  currentCost: (profileId: number) => number | null,
  boundaries: Float64Array,
  allowed: Uint8Array,
  binding: (string | null)[],
): void {
  const states = new Map<string, LimitState>();
  let scratchIn: (LimitState | undefined)[] = [];
  resolver.reset();
  let nextBoundary = 0;
  for (let k = 0; k < indices.length; k++) {
    const i = indices[k] ?? 0;
    const t = window.timeMs[i] ?? 0;
    if (nextBoundary < boundaries.length && t >= (boundaries[nextBoundary] ?? 0)) {
      while (nextBoundary < boundaries.length && t >= (boundaries[nextBoundary] ?? 0)) {
        nextBoundary++;
      }
      resolver.reset();
    }
    const profileId = window.profile[i] ?? 0;
    const resolved = resolver.resolve(subject, profileId, t, currentCost(profileId));
    const n = resolved.checks.length;
    if (scratchIn.length !== n) scratchIn = new Array(n);
    for (let c = 0; c < n; c++) scratchIn[c] = states.get(resolved.keys[c] ?? "");
    const step = decideLayered(scratchIn, resolved.checks, t, resolved.cost);
    const decision = step.decision;
    for (let c = 0; c < n; c++) {
      const next = step.states[c];
      if (next !== undefined) states.set(resolved.keys[c] ?? "", next);
    }
    allowed[k] = decision.allowed ? 1 : 0;
    binding[k] = decision.scope;
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
  const current = new PolicyResolver(prepareSnapshot(options.current), window.profiles);
  const draft = new PolicyResolver(prepareSnapshot(options.draft), window.profiles);
  const currentCostOf = (profileId: number) =>
    current.classCost(window.profiles[profileId]?.endpointClass ?? null);
  const boundaries = incidentBoundaries([options.current, options.draft]);
  const currentVersion = options.current.version;
  const { starts, indices } = groupBySubject(window);

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

  for (let s = 0; s < window.subjects.length; s++) {
    const group = indices.subarray(starts[s] ?? 0, starts[s + 1] ?? 0);
    if (group.length === 0) continue;
    const subject = window.subjects[s] ?? "";
    // Does the draft change this subject's checks anywhere in the span?
    let isChanged = options.replayAll === true;
    let tier: string | null = null;
    {
      let nextBoundary = -1;
      current.reset();
      draft.reset();
      for (let k = 0; k < group.length; k++) {
        const i = group[k] ?? 0;
        const t = window.timeMs[i] ?? 0;
        let epoch = 0;
        while (epoch < boundaries.length && t >= (boundaries[epoch] ?? 0)) epoch++;
        if (epoch !== nextBoundary) {
          nextBoundary = epoch;
          current.reset();
          draft.reset();
        }
        const profileId = window.profile[i] ?? 0;
        const cost = currentCostOf(profileId);
        const now = current.resolve(subject, profileId, t, cost);
        tier = now.tier;
        if (isChanged) break;
        if (now.signature !== draft.resolve(subject, profileId, t, cost).signature) {
          isChanged = true;
          break;
        }
      }
    }

    const n = group.length;
    const nowAllowed = new Uint8Array(n);
    const draftAllowed = new Uint8Array(n);
    const nowBinding = new Array<string | null>(n).fill(null);
    const draftBinding = new Array<string | null>(n).fill(null);
    if (isChanged) {
      replaySubject(
        window,
        subject,
        group,
        current,
        currentCostOf,
        boundaries,
        nowAllowed,
        nowBinding,
      );
      replaySubject(
        window,
        subject,
        group,
        draft,
        currentCostOf,
        boundaries,
        draftAllowed,
        draftBinding,
      );
    } else {
      for (let k = 0; k < n; k++) {
        const i = group[k] ?? 0;
        const isAllowed = ((window.flags[i] ?? 0) & FLAG_ALLOWED) !== 0 ? 1 : 0;
        nowAllowed[k] = isAllowed;
        draftAllowed[k] = isAllowed;
      }
    }

    let requests = 0;
    let moreRejected = 0;
    let moreAdmitted = 0;
    let nowRejected = 0;
    let draftRejected = 0;
    const bindNow = new Map<string | null, number>();
    const bindDraft = new Map<string | null, number>();
    for (let k = 0; k < n; k++) {
      const i = group[k] ?? 0;
      const t = window.timeMs[i] ?? 0;
      if (t < fromMs) {
        warmUpRequests++;
        continue;
      }
      if (t >= toMs) continue;
      const w = window.weight[i] ?? 1;
      const flags = window.flags[i] ?? 0;
      const isRecordedAllowed = (flags & FLAG_ALLOWED) !== 0;
      recordedRequests++;
      if ((flags & FLAG_WITHOUT_STORE) !== 0) withoutStore++;
      if ((flags & FLAG_LOCAL_STAGE) !== 0) localStage++;
      const minute = Math.floor((t - fromMs) / MINUTE_MS);
      requests += w;
      if (isRecordedAllowed) fig.recordedAdmitted[minute] = (fig.recordedAdmitted[minute] ?? 0) + w;
      else {
        fig.recordedRejected[minute] = (fig.recordedRejected[minute] ?? 0) + w;
        recordedRejected += w;
      }
      const a = nowAllowed[k] === 1;
      const b = draftAllowed[k] === 1;
      if (a) fig.nowAdmitted[minute] = (fig.nowAdmitted[minute] ?? 0) + w;
      else {
        fig.nowRejected[minute] = (fig.nowRejected[minute] ?? 0) + w;
        nowRejected += w;
      }
      if (b) fig.draftAdmitted[minute] = (fig.draftAdmitted[minute] ?? 0) + w;
      else {
        fig.draftRejected[minute] = (fig.draftRejected[minute] ?? 0) + w;
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
        const profile = window.profiles[window.profile[i] ?? 0];
        const isStoreDecided =
          (flags & FLAG_STORE_TIME) !== 0 &&
          (flags & (FLAG_WITHOUT_STORE | FLAG_LOCAL_STAGE)) === 0;
        if (isStoreDecided && profile?.policyVersion === currentVersion) {
          compared++;
          const recordedBinding = window.binding[i] ?? NO_BINDING;
          const recordedScope =
            recordedBinding === NO_BINDING ? null : (profile.scopes[recordedBinding] ?? null);
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
