/**
 * The replay's fast path (interned bucket slots, one resolution per profile, the lean layered
 * decide, subjects the draft cannot change taken as recorded) against a straightforward
 * reference: every request resolved afresh and decided by `decideLayered` over a Map of states
 * keyed by subject and bucket. A scripted trace over every algorithm a policy can use, an incident
 * that starts and ends inside the window, anonymous subjects keyed by route, a gateway-set cost,
 * a profile of an older version, requests decided without Redis and recorded outcomes that
 * disagree with the replay.
 */
import { decideLayered, type LimitState } from "@limitplane/enforcer/limiter";
import { prepareSnapshot, resolveLimits, type TSnapshot } from "@limitplane/enforcer/policy";
import {
  FLAG_ALLOWED,
  FLAG_LOCAL_STAGE,
  FLAG_STORE_TIME,
  FLAG_WITHOUT_STORE,
  NO_BINDING,
  type TrafficProfile,
} from "@limitplane/enforcer/recording";
import { exampleSnapshot } from "@limitplane/enforcer/testing";
import { describe, expect, it } from "vitest";
import { orderTrafficWindow } from "./order-traffic-window";
import { type ReplayResult, replayTraffic, type TrafficWindow } from "./replay-traffic";

const MINUTE_MS = 60_000;
const FROM_MS = Date.parse("2025-06-10T12:00:00.000Z");
const TO_MS = FROM_MS + 10 * MINUTE_MS;
const WARM_UP_FROM_MS = FROM_MS - 2 * MINUTE_MS;

type PolicyInput = Parameters<NonNullable<Parameters<typeof exampleSnapshot>[0]>>[0];

/** Every algorithm in force somewhere; `strict` tightens what the draft changes. */
function policyEdit(strict: boolean) {
  return (input: PolicyInput) => {
    for (const tier of input.tiers) {
      if (tier.name === "free") {
        tier.limit = strict
          ? { algorithm: "token-bucket", capacity: 10, refillPerSec: 2 }
          : { algorithm: "token-bucket", capacity: 12, refillPerSec: 3 };
      }
      if (tier.name === "pro") {
        tier.limit = { algorithm: "sliding-window", limit: strict ? 14 : 25, windowMs: 10_000 };
      }
      if (tier.name === "enterprise") {
        tier.limit = { algorithm: "fixed-window", limit: 20, windowMs: 5_000 };
      }
    }
    for (const endpointClass of input.endpointClasses) {
      if (endpointClass.name === "reports" && endpointClass.limits !== undefined) {
        endpointClass.limits.free = { algorithm: "sliding-log", limit: 10, windowMs: 60_000 };
      }
    }
    input.ceilings.perCustomer = {
      algorithm: "leaky-meter",
      burst: strict ? 18 : 25,
      drainPerSec: 3,
    };
    input.incidentOverrides = [
      {
        id: "inc-globex",
        customerId: "globex",
        endpointClass: null,
        factor: 2,
        startsAt: new Date(FROM_MS + 3 * MINUTE_MS).toISOString(),
        expiresAt: new Date(FROM_MS + 6 * MINUTE_MS).toISOString(),
        owner: "oncall",
        reason: "a scripted incident",
      },
    ];
  };
}

const current = exampleSnapshot(policyEdit(false), { version: 7 });
const draft = exampleSnapshot(policyEdit(true), { version: 8 });

/** mulberry32: a seeded generator, so the trace is the same every run. */
function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface Script {
  readonly subject: string;
  /** Profile ids it sends, picked at random. */
  readonly profiles: readonly number[];
}

const prepared = prepareSnapshot(current);
/** A profile as a gateway records it: the scopes the policy in force resolved. */
function profileOf(
  tier: string | null,
  endpointClass: string,
  options: { cost?: number; policyVersion?: number } = {},
): TrafficProfile {
  const resolution = resolveLimits(
    prepared,
    { customerId: tier === null ? null : "someone", tier, endpointClass, clientAddress: null },
    WARM_UP_FROM_MS,
    { trace: false },
  );
  return {
    tier,
    endpointClass,
    cost: options.cost ?? resolution.cost,
    policyVersion: options.policyVersion ?? current.version,
    scopes: resolution.checks.map((check) => check.scope),
  };
}

const profiles: TrafficProfile[] = [
  profileOf("free", "default"), // 0
  profileOf("free", "search"), // 1
  profileOf("free", "reports"), // 2
  profileOf("pro", "default"), // 3
  profileOf("pro", "reports"), // 4
  profileOf("enterprise", "default"), // 5
  profileOf("free", "default", { cost: 3 }), // 6: a cost the gateway set
  profileOf("pro", "default", { policyVersion: 6 }), // 7: recorded under an older version
  profileOf(null, "sign-in"), // 8
  profileOf(null, "default"), // 9
];

const scripts: Script[] = [
  { subject: "c:ann", profiles: [0, 0, 0, 1, 2, 6] },
  { subject: "c:bob", profiles: [0, 1, 1, 2] },
  { subject: "c:cy", profiles: [3, 3, 4, 7] },
  { subject: "c:dee", profiles: [3, 4] },
  { subject: "c:globex", profiles: [3, 4] },
  { subject: "c:ent", profiles: [5] },
  { subject: "h:addr-1", profiles: [8, 9, 9] },
  { subject: "h:addr-2", profiles: [8] },
];

/** Bursts at random times, some requests of one script call sharing a time; shuffled. */
function scriptedWindow(): TrafficWindow {
  const random = seeded(17);
  const rows: { time: number; subject: number; profile: number; order: number }[] = [];
  scripts.forEach((script, subject) => {
    for (let b = 0; b < 40; b++) {
      let time = WARM_UP_FROM_MS + Math.round(random() * (TO_MS + 30_000 - WARM_UP_FROM_MS));
      const size = 1 + Math.floor(random() * 30);
      for (let k = 0; k < size; k++) {
        const profile = script.profiles[Math.floor(random() * script.profiles.length)] ?? 0;
        // Every fourth pair shares its time (one script call): `order` orders them.
        const sameCall = k % 4 === 1;
        if (!sameCall) time += Math.round(random() * 400) + 0.001 * Math.floor(random() * 1000);
        rows.push({ time, subject, profile, order: sameCall ? 1 : 0 });
      }
    }
  });
  for (let i = rows.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [rows[i], rows[j]] = [rows[j] as (typeof rows)[number], rows[i] as (typeof rows)[number]];
  }
  const n = rows.length;
  const window = {
    count: n,
    subjects: scripts.map((script) => script.subject),
    profiles,
    timeMs: Float64Array.from(rows, (row) => row.time),
    subject: Uint32Array.from(rows, (row) => row.subject),
    profile: Uint32Array.from(rows, (row) => row.profile),
    order: Uint16Array.from(rows, (row) => row.order),
    flags: new Uint8Array(n),
    binding: new Uint8Array(n),
    weight: new Float32Array(n).fill(1),
  };
  // What the gateways recorded: the reference's outcomes under the policy in force, except a few
  // that disagree, a few decided without Redis and one by the local stage.
  const recorded = referenceOutcomes(window, current);
  for (let i = 0; i < n; i++) {
    const outcome = recorded[i] as Outcome;
    let isAllowed = outcome.isAllowed;
    if (i % 97 === 5) isAllowed = !isAllowed;
    const scopes = profiles[window.profile[i] ?? 0]?.scopes ?? [];
    const bound = outcome.scope === null ? -1 : scopes.indexOf(outcome.scope);
    window.binding[i] = bound === -1 ? NO_BINDING : bound;
    window.flags[i] =
      (isAllowed ? FLAG_ALLOWED : 0) |
      (i % 131 === 7 ? FLAG_WITHOUT_STORE : FLAG_STORE_TIME) |
      (i === 11 ? FLAG_LOCAL_STAGE : 0);
  }
  return window;
}

interface Outcome {
  readonly isAllowed: boolean;
  readonly scope: string | null;
  /** What the request was checked against (checks and cost), to tell whether a draft changes it. */
  readonly shape: string;
  /** The algorithms of the enforced checks that rejected it. */
  readonly rejectedBy: readonly string[];
}

/** The reference: each subject's requests in (time, order), resolved afresh, `decideLayered`. */
function referenceOutcomes(window: TrafficWindow, snapshot: TSnapshot): Outcome[] {
  const policy = prepareSnapshot(snapshot);
  const currentPolicy = prepareSnapshot(current);
  const outcomes = new Array<Outcome>(window.count);
  const states = new Map<string, LimitState>();
  const sorted = Array.from({ length: window.count }, (_, i) => i).sort(
    (a, b) =>
      (window.timeMs[a] ?? 0) - (window.timeMs[b] ?? 0) ||
      (window.order[a] ?? 0) - (window.order[b] ?? 0),
  );
  for (const i of sorted) {
    const subject = window.subjects[window.subject[i] ?? 0] ?? "";
    const profile = window.profiles[window.profile[i] ?? 0] as TrafficProfile;
    const isCustomer = subject.startsWith("c:");
    const request = {
      customerId: isCustomer ? subject.slice(2) : null,
      tier: isCustomer ? profile.tier : null,
      endpointClass: profile.endpointClass,
      clientAddress: null,
    };
    const t = window.timeMs[i] ?? 0;
    const resolution = resolveLimits(policy, request, t, { trace: false });
    const classCost = resolveLimits(currentPolicy, request, t, { trace: false }).cost;
    const cost = profile.cost === classCost ? resolution.cost : profile.cost;
    const keys = resolution.checks.map(
      (check) => `${subject}|${resolution.subject}|${check.bucket ?? check.scope}`,
    );
    const step = decideLayered(
      keys.map((key) => states.get(key)),
      resolution.checks,
      t,
      cost,
    );
    keys.forEach((key, c) => {
      const next = step.states[c];
      if (next !== undefined) states.set(key, next);
    });
    outcomes[i] = {
      isAllowed: step.decision.allowed,
      scope: step.decision.scope,
      shape: JSON.stringify([resolution.subject, cost, resolution.checks]),
      rejectedBy: resolution.checks
        .filter((check, c) => check.mode === "enforce" && !step.decision.outcomes[c]?.allowed)
        .map((check) => check.limit.algorithm),
    };
  }
  return outcomes;
}

function mostFrequent(scopes: readonly (string | null)[]): string | null {
  const counts = new Map<string | null, number>();
  for (const scope of scopes) counts.set(scope, (counts.get(scope) ?? 0) + 1);
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

/** What `replayTraffic` must report, computed the plain way. */
function referenceReplay(window: TrafficWindow, replayAll: boolean): ReplayResult {
  const now = referenceOutcomes(window, current);
  const drafted = referenceOutcomes(window, draft);
  const minuteCount = Math.ceil((TO_MS - FROM_MS) / MINUTE_MS);
  const minutes = Array.from({ length: minuteCount }, (_, m) => ({
    minuteMs: FROM_MS + m * MINUTE_MS,
    recordedAdmitted: 0,
    recordedRejected: 0,
    nowAdmitted: 0,
    nowRejected: 0,
    draftAdmitted: 0,
    draftRejected: 0,
  }));
  const totals = {
    requests: 0,
    recordedRejected: 0,
    nowRejected: 0,
    draftRejected: 0,
    moreRejected: 0,
    moreAdmitted: 0,
  };
  const byTier = new Map<
    string | null,
    { requests: number; nowRejected: number; draftRejected: number; customersAffected: number }
  >();
  const affected: ReplayResult["mostAffected"][number][] = [];
  let recordedRequests = 0;
  let warmUpRequests = 0;
  let withoutStore = 0;
  let localStage = 0;
  let replayedRequests = 0;
  let compared = 0;
  let matched = 0;
  window.subjects.forEach((subject, s) => {
    const mine = Array.from({ length: window.count }, (_, i) => i).filter(
      (i) => window.subject[i] === s,
    );
    const isChanged = replayAll || mine.some((i) => now[i]?.shape !== drafted[i]?.shape);
    const tier = resolveLimits(
      prepared,
      {
        customerId: subject.startsWith("c:") ? subject.slice(2) : null,
        tier: subject.startsWith("c:")
          ? (profiles[window.profile[mine[0] ?? 0] ?? 0]?.tier ?? null)
          : null,
        endpointClass: "default",
      },
      FROM_MS,
      { trace: false },
    ).tier;
    const figures = {
      requests: 0,
      nowRejected: 0,
      draftRejected: 0,
      moreRejected: 0,
      moreAdmitted: 0,
    };
    const bindNow: (string | null)[] = [];
    const bindDraft: (string | null)[] = [];
    for (const i of mine) {
      const t = window.timeMs[i] ?? 0;
      if (t < FROM_MS) {
        warmUpRequests++;
        continue;
      }
      if (t >= TO_MS) continue;
      const flags = window.flags[i] ?? 0;
      const isRecordedAllowed = (flags & FLAG_ALLOWED) !== 0;
      recordedRequests++;
      if ((flags & FLAG_WITHOUT_STORE) !== 0) withoutStore++;
      if ((flags & FLAG_LOCAL_STAGE) !== 0) localStage++;
      const minute = minutes[Math.floor((t - FROM_MS) / MINUTE_MS)] as (typeof minutes)[number];
      const a = isChanged ? (now[i] as Outcome).isAllowed : isRecordedAllowed;
      const b = isChanged ? (drafted[i] as Outcome).isAllowed : isRecordedAllowed;
      figures.requests++;
      if (isRecordedAllowed) minute.recordedAdmitted++;
      else {
        minute.recordedRejected++;
        totals.recordedRejected++;
      }
      if (a) minute.nowAdmitted++;
      else {
        minute.nowRejected++;
        figures.nowRejected++;
      }
      if (b) minute.draftAdmitted++;
      else {
        minute.draftRejected++;
        figures.draftRejected++;
      }
      if (a && !b) figures.moreRejected++;
      if (!a && b) figures.moreAdmitted++;
      if (!isChanged) continue;
      replayedRequests++;
      bindNow.push((now[i] as Outcome).scope);
      bindDraft.push((drafted[i] as Outcome).scope);
      const profile = window.profiles[window.profile[i] ?? 0] as TrafficProfile;
      const isStoreDecided =
        (flags & FLAG_STORE_TIME) !== 0 && (flags & (FLAG_WITHOUT_STORE | FLAG_LOCAL_STAGE)) === 0;
      if (isStoreDecided && profile.policyVersion === current.version) {
        compared++;
        const recordedBinding = window.binding[i] ?? NO_BINDING;
        const recordedScope =
          recordedBinding === NO_BINDING ? null : (profile.scopes[recordedBinding] ?? null);
        if (a === isRecordedAllowed && (now[i] as Outcome).scope === recordedScope) matched++;
      }
    }
    totals.requests += figures.requests;
    totals.nowRejected += figures.nowRejected;
    totals.draftRejected += figures.draftRejected;
    totals.moreRejected += figures.moreRejected;
    totals.moreAdmitted += figures.moreAdmitted;
    const tierFigures = byTier.get(tier) ?? {
      requests: 0,
      nowRejected: 0,
      draftRejected: 0,
      customersAffected: 0,
    };
    tierFigures.requests += figures.requests;
    tierFigures.nowRejected += figures.nowRejected;
    tierFigures.draftRejected += figures.draftRejected;
    if (figures.moreRejected + figures.moreAdmitted > 0) {
      if (subject.startsWith("c:")) tierFigures.customersAffected++;
      affected.push({
        subject,
        customerId: subject.startsWith("c:") ? subject.slice(2) : null,
        tier,
        requests: figures.requests,
        moreRejected: figures.moreRejected,
        moreAdmitted: figures.moreAdmitted,
        bindingNow: mostFrequent(bindNow),
        bindingDraft: mostFrequent(bindDraft),
      });
    }
    byTier.set(tier, tierFigures);
  });
  affected.sort(
    (x, y) =>
      y.moreRejected + y.moreAdmitted - (x.moreRejected + x.moreAdmitted) ||
      (x.subject < y.subject ? -1 : 1),
  );
  return {
    minutes,
    totals,
    byTier: [...byTier.entries()]
      .map(([tier, figures]) => ({ tier, ...figures }))
      .sort((x, y) => (x.tier ?? "~").localeCompare(y.tier ?? "~")),
    mostAffected: affected.slice(0, 20),
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

describe("the replay's fast path against a plain reference replay", () => {
  const window = scriptedWindow();
  const options = { fromMs: FROM_MS, toMs: TO_MS, current, draft };

  it("the trace exercises what it claims: every algorithm rejects, and the draft changes outcomes", () => {
    const now = referenceOutcomes(window, current);
    const rejecting = new Set(now.flatMap((outcome) => outcome.rejectedBy));
    expect([...rejecting].sort()).toEqual([
      "fixed-window",
      "leaky-meter",
      "sliding-log",
      "sliding-window",
      "token-bucket",
    ]);
    expect(now.some((outcome) => !outcome.isAllowed)).toBe(true);
    const result = referenceReplay(window, false);
    expect(result.totals.moreRejected).toBeGreaterThan(0);
    // ent's checks are the same under both policies: taken as recorded, not replayed.
    expect(result.replayedRequests).toBeLessThan(result.recordedRequests);
    expect(result.fidelity.matched).toBeLessThan(result.fidelity.compared);
  });

  it("replaying every subject gives the reference's figures exactly", () => {
    expect(replayTraffic(window, { ...options, replayAll: true })).toEqual(
      referenceReplay(window, true),
    );
  });

  it("skipping subjects the draft cannot change gives the reference's figures exactly", () => {
    expect(replayTraffic(window, options)).toEqual(referenceReplay(window, false));
  });

  it("the window in subject order (as the loader hands it over) gives the same figures", () => {
    const ordered = orderTrafficWindow(window);
    expect(ordered.count).toBe(window.count);
    for (let k = 1; k < ordered.count; k++) {
      const isInOrder =
        (ordered.subject[k - 1] ?? 0) < (ordered.subject[k] ?? 0) ||
        ((ordered.subject[k - 1] ?? 0) === (ordered.subject[k] ?? 0) &&
          (ordered.timeMs[k - 1] ?? 0) <= (ordered.timeMs[k] ?? 0));
      expect(isInOrder).toBe(true);
    }
    expect(replayTraffic(ordered, options)).toEqual(referenceReplay(window, false));
    expect(replayTraffic(ordered, { ...options, replayAll: true })).toEqual(
      referenceReplay(window, true),
    );
  });
});
