import { describe, expect, it } from "vitest";
import { ManualClock } from "../limiter/clock";
import { DecisionMetrics, type MetricsDecision, OTHER_SCOPE } from "./decision-metrics";
import { escapeLabelValue, renderPrometheus } from "./prometheus";
import { RecentRejections } from "./recent-rejections";

/** 10:00:00.000 UTC on a fixed day. */
const WALL_T0 = Date.UTC(2026, 0, 15, 10, 0, 0);

type OutcomeSpec = [scope: string, mode: "enforce" | "dry-run", allowed: boolean];

function decision(
  allowed: boolean,
  outcomes: OutcomeSpec[],
  extra: Partial<Pick<MetricsDecision, "source" | "failure">> & {
    fallback?: "open" | "closed" | "local";
  } = {},
): MetricsDecision {
  return {
    allowed,
    outcomes: outcomes.map(([scope, mode, isAllowed]) => ({
      scope,
      mode,
      allowed: isAllowed,
      fallback: extra.fallback ?? null,
    })),
    source: extra.source ?? "store",
    failure: extra.failure ?? null,
  };
}

function metricsAt(wallMs = WALL_T0): { metrics: DecisionMetrics; wall: ManualClock } {
  const wall = new ManualClock(wallMs);
  return { metrics: new DecisionMetrics({ wallClock: wall }), wall };
}

describe("DecisionMetrics: what each decision adds", () => {
  it.each<[string, MetricsDecision, Record<string, [number, number, number, number]>]>([
    [
      "an admission counts allowed on every scope it was checked against, dry-run included",
      decision(true, [
        ["tier:pro", "enforce", true],
        ["ceiling", "enforce", true],
        ["candidate:c1", "dry-run", true],
      ]),
      { "candidate:c1": [1, 0, 0, 0], ceiling: [1, 0, 0, 0], "tier:pro": [1, 0, 0, 0] },
    ],
    [
      "a dry-run limit that would reject counts would-reject (only), the enforced ones allowed",
      decision(true, [
        ["tier:pro", "enforce", true],
        ["candidate:c1", "dry-run", false],
      ]),
      { "candidate:c1": [0, 0, 1, 0], "tier:pro": [1, 0, 0, 0] },
    ],
    [
      "a dry-run limit counts a request rejected by an enforced one too: it evaluated it",
      decision(false, [
        ["tier:pro", "enforce", false],
        ["candidate:c1", "dry-run", true],
        ["candidate:c2", "dry-run", false],
      ]),
      { "candidate:c1": [1, 0, 0, 0], "candidate:c2": [0, 0, 1, 0], "tier:pro": [0, 1, 0, 0] },
    ],
    [
      "a rejection counts rejected on the limits that rejected, nothing on the others",
      decision(false, [
        ["tier:pro", "enforce", false],
        ["ceiling", "enforce", true],
        ["tier:pro/endpoint:reports", "enforce", false],
      ]),
      {
        ceiling: [0, 0, 0, 0],
        "tier:pro": [0, 1, 0, 0],
        "tier:pro/endpoint:reports": [0, 1, 0, 0],
      },
    ],
    [
      "a degraded decision counts degraded on each limit its failure policy decided",
      decision(false, [["address/endpoint:sign-in", "enforce", false]], {
        source: "fallback",
        failure: "timeout",
        fallback: "closed",
      }),
      { "address/endpoint:sign-in": [0, 1, 0, 1] },
    ],
  ])("%s", (_name, made, expected) => {
    const { metrics } = metricsAt();
    metrics.record(made, 100);
    const byScope = Object.fromEntries(
      metrics
        .totals()
        .scopes.map(({ scope, allowed, rejected, wouldReject, degraded }) => [
          scope,
          [allowed, rejected, wouldReject, degraded],
        ]),
    );
    expect(byScope).toEqual(expected);
  });

  it("counts degraded decisions by failure and decisions by source", () => {
    const { metrics } = metricsAt();
    metrics.record(decision(true, [], { source: "fallback", failure: "circuit-open" }), 3);
    metrics.record(decision(true, [], { source: "fallback", failure: "timeout" }), 50_000);
    metrics.record(
      decision(false, [["tier:pro", "enforce", false]], { source: "denial-cache" }),
      2,
    );
    metrics.record(decision(true, []), 900);
    const totals = metrics.totals();
    expect(totals.degradedByFailure).toEqual({ timeout: 1, "store-error": 0, "circuit-open": 1 });
    expect(totals.decisionsBySource).toEqual({
      store: 1,
      fallback: 2,
      "denial-cache": 1,
      "flood-guard": 0,
      lease: 0,
      "no-policy": 0,
      rule: 0,
    });
  });

  it("puts a latency on a bucket's upper bound into that bucket (le is inclusive)", () => {
    const metrics = new DecisionMetrics({
      wallClock: new ManualClock(WALL_T0),
      latencyBoundsMicros: [100, 1_000],
    });
    for (const micros of [0, 100, 101, 1_000, 1_001, 5_000_000]) {
      metrics.record(decision(true, []), micros);
    }
    expect(metrics.totals().latency).toEqual({
      boundsMicros: [100, 1_000],
      counts: [2, 2, 2],
      sumMicros: 5_002_202,
      count: 6,
    });
  });
});

describe("DecisionMetrics: drain", () => {
  it("returns the deltas since the last drain, tagged by one-second wall-clock buckets", () => {
    const { metrics, wall } = metricsAt();
    wall.set(WALL_T0 + 200);
    metrics.record(decision(true, [["tier:pro", "enforce", true]]), 100);
    wall.set(WALL_T0 + 900);
    metrics.record(decision(false, [["tier:pro", "enforce", false]]), 100);
    wall.set(WALL_T0 + 1_100);
    metrics.record(decision(true, [["tier:pro", "enforce", true]]), 100);

    const first = metrics.drain();
    expect(first.map((bucket) => [bucket.startMs, bucket.durationMs, bucket.scopes])).toEqual([
      [
        WALL_T0,
        1_000,
        [{ scope: "tier:pro", allowed: 1, rejected: 1, wouldReject: 0, degraded: 0 }],
      ],
      [
        WALL_T0 + 1_000,
        1_000,
        [{ scope: "tier:pro", allowed: 1, rejected: 0, wouldReject: 0, degraded: 0 }],
      ],
    ]);
    expect(metrics.drain()).toEqual([]);

    metrics.record(decision(true, [["tier:pro", "enforce", true]]), 100);
    const second = metrics.drain();
    expect(second).toHaveLength(1);
    expect(second[0]?.startMs).toBe(WALL_T0 + 1_000);
    expect(second[0]?.scopes[0]?.allowed).toBe(1);
    // The running totals are untouched by draining.
    expect(metrics.totals().scopes[0]).toMatchObject({ allowed: 3, rejected: 1 });
  });

  it("supports ten-second buckets", () => {
    const wall = new ManualClock(WALL_T0 + 12_345);
    const metrics = new DecisionMetrics({ wallClock: wall, bucketMs: 10_000 });
    metrics.record(decision(true, []), 1);
    expect(metrics.drain()[0]).toMatchObject({ startMs: WALL_T0 + 10_000, durationMs: 10_000 });
  });

  it("keeps at most maxPendingBuckets undrained buckets when the flusher stalls", () => {
    const wall = new ManualClock(WALL_T0);
    const metrics = new DecisionMetrics({ wallClock: wall, maxPendingBuckets: 60 });
    for (let second = 0; second < 1_000; second++) {
      wall.set(WALL_T0 + second * 1_000);
      metrics.record(decision(true, [["tier:pro", "enforce", true]]), 1);
    }
    const drained = metrics.drain();
    expect(drained).toHaveLength(60);
    expect(drained[0]?.startMs).toBe(WALL_T0 + 940_000);
    expect(metrics.droppedBucketCount).toBe(940);
    expect(metrics.totals().scopes[0]?.allowed).toBe(1_000);
  });
});

describe("cardinality stays bounded", () => {
  it("under 100k distinct subjects: as many series as scopes, whatever the keys", () => {
    const { metrics } = metricsAt();
    const recent = new RecentRejections({
      maxCustomers: 1_000,
      clock: new ManualClock(0),
      wallClock: new ManualClock(WALL_T0),
    });
    const scopes = ["tier:pro", "tier:free", "ceiling", "tier:pro/endpoint:reports"];
    for (let i = 0; i < 100_000; i++) {
      const scope = scopes[i % scopes.length] ?? "ceiling";
      const isRejected = i % 3 === 0;
      metrics.record(decision(!isRejected, [[scope, "enforce", !isRejected]]), i % 2_000);
      if (isRejected) recent.record(`customer-${i}`, scope, "reports");
    }
    expect(metrics.scopeCount).toBe(4);
    expect(metrics.totals().scopes).toHaveLength(4);
    const lines = renderPrometheus(metrics.totals()).split("\n").length;
    const oneSubject = new DecisionMetrics({ wallClock: new ManualClock(WALL_T0) });
    for (const scope of scopes) oneSubject.record(decision(true, [[scope, "enforce", true]]), 1);
    expect(renderPrometheus(oneSubject.totals()).split("\n")).toHaveLength(lines);
    expect(recent.customerCount).toBe(1_000);
  });

  it("scopes beyond maxScopes are counted under (other)", () => {
    const metrics = new DecisionMetrics({ wallClock: new ManualClock(WALL_T0), maxScopes: 2 });
    for (const scope of ["a", "b", "c", "d", "a"]) {
      metrics.record(decision(true, [[scope, "enforce", true]]), 1);
    }
    expect(metrics.totals().scopes.map(({ scope, allowed }) => [scope, allowed])).toEqual([
      [OTHER_SCOPE, 2],
      ["a", 2],
      ["b", 1],
    ]);
  });
});

describe("RecentRejections", () => {
  function recorder(
    options: { maxPerCustomer?: number; ttlMs?: number; maxPending?: number } = {},
  ) {
    const clock = new ManualClock(0);
    const wall = new ManualClock(WALL_T0);
    return { recent: new RecentRejections({ clock, wallClock: wall, ...options }), clock, wall };
  }

  it("lists a customer's rejections newest first, with wall-clock time, scope and endpoint class", () => {
    const { recent, wall } = recorder();
    recent.record("acme", "tier:pro", "search");
    wall.advance(1_500);
    recent.record("acme", "tier:pro/endpoint:reports", "reports");
    recent.record("globex", "ceiling", null);
    expect(recent.recent("acme")).toEqual([
      {
        atMs: WALL_T0 + 1_500,
        firstAtMs: WALL_T0 + 1_500,
        count: 1,
        scope: "tier:pro/endpoint:reports",
        endpointClass: "reports",
      },
      { atMs: WALL_T0, firstAtMs: WALL_T0, count: 1, scope: "tier:pro", endpointClass: "search" },
    ]);
    expect(recent.recent("nobody")).toEqual([]);
  });

  it("keeps at most maxPerCustomer rejections per customer, dropping the oldest", () => {
    const { recent } = recorder({ maxPerCustomer: 3 });
    for (let i = 0; i < 10; i++) recent.record("acme", `scope-${i}`, null);
    expect(recent.recent("acme").map((rejection) => rejection.scope)).toEqual([
      "scope-9",
      "scope-8",
      "scope-7",
    ]);
  });

  it("expires rejections after ttlMs on the monotonic clock, whatever the wall clock does", () => {
    const { recent, clock, wall } = recorder({ ttlMs: 60_000 });
    recent.record("acme", "tier:pro", null);
    clock.advance(30_000);
    recent.record("acme", "ceiling", null);
    wall.advance(-86_400_000); // a wall-clock step changes nothing
    clock.advance(30_000);
    expect(recent.recent("acme").map((rejection) => rejection.scope)).toEqual(["ceiling"]);
    clock.advance(30_000);
    expect(recent.recent("acme")).toEqual([]);
    expect(recent.customerCount).toBe(0);
  });

  it("drains what was recorded since the last drain, oldest first", () => {
    const { recent } = recorder();
    recent.record("acme", "tier:pro", "search");
    recent.record("globex", "ceiling", null);
    const at = { atMs: WALL_T0, firstAtMs: WALL_T0, count: 1 };
    expect(recent.drain()).toEqual([
      { customerId: "acme", ...at, scope: "tier:pro", endpointClass: "search" },
      { customerId: "globex", ...at, scope: "ceiling", endpointClass: null },
    ]);
    expect(recent.drain()).toEqual([]);
    expect(recent.recent("acme")).toHaveLength(1);
  });

  it("counts rejections by one limit within a second in one entry, until it is drained", () => {
    const { recent, wall } = recorder();
    for (let i = 0; i < 5; i++) {
      recent.record("acme", "tier:pro", "search");
      wall.advance(100);
    }
    // Another limit, another endpoint class: entries of their own.
    recent.record("acme", "ceiling", "search");
    recent.record("acme", "ceiling", null);
    // A second after the first of an entry (at +500 ms): a new one.
    wall.set(WALL_T0 + 1_500);
    recent.record("acme", "ceiling", null);
    expect(
      recent.recent("acme").map(({ scope, endpointClass, count }) => [scope, endpointClass, count]),
    ).toEqual([
      ["ceiling", null, 1],
      ["ceiling", null, 1],
      ["ceiling", "search", 1],
      ["tier:pro", "search", 5],
    ]);
    expect(recent.recent("acme").at(-1)).toMatchObject({
      firstAtMs: WALL_T0,
      atMs: WALL_T0 + 400,
    });
    const drained = recent.drain();
    expect(drained.map((rejection) => rejection.count)).toEqual([5, 1, 1, 1]);
    // Drained: the next rejection starts an entry of its own, so nothing is sent twice.
    recent.record("acme", "ceiling", null);
    expect(recent.drain()).toEqual([
      expect.objectContaining({ scope: "ceiling", endpointClass: null, count: 1 }),
    ]);
    // A wall clock that steps back starts a new entry too.
    wall.advance(-500);
    recent.record("acme", "ceiling", null);
    recent.record("acme", "ceiling", null);
    expect(recent.drain().map((rejection) => rejection.count)).toEqual([2]);
  });

  it("keeps at most maxPending undrained rejections, dropping the oldest and counting them", () => {
    const { recent } = recorder({ maxPending: 3 });
    for (let i = 0; i < 5; i++) recent.record(`c${i}`, "tier:pro", null);
    expect(recent.drain().map((rejection) => rejection.customerId)).toEqual(["c2", "c3", "c4"]);
    expect(recent.droppedCount).toBe(2);
    recent.record("c5", "tier:pro", null);
    expect(recent.drain().map((rejection) => rejection.customerId)).toEqual(["c5"]);
  });
});

describe("renderPrometheus", () => {
  it("writes the exact exposition text for a small case", () => {
    const metrics = new DecisionMetrics({
      wallClock: new ManualClock(WALL_T0),
      latencyBoundsMicros: [100, 1_000, 50_000],
    });
    metrics.record(
      decision(true, [
        ["tier:pro", "enforce", true],
        ["candidate:c1", "dry-run", false],
      ]),
      80,
    );
    metrics.record(decision(false, [["tier:pro", "enforce", false]]), 1_200);
    metrics.record(
      decision(true, [["tier:pro", "enforce", true]], {
        source: "fallback",
        failure: "timeout",
        fallback: "open",
      }),
      50_000,
    );
    expect(renderPrometheus(metrics.totals(), { constantLabels: { gateway: "gw-1" } })).toBe(
      [
        "# HELP limitplane_decisions_total Requests per scope: admitted (allowed; for a dry-run scope, would have admitted), rejected by the scope, or would have been rejected by a dry-run scope (would_reject).",
        "# TYPE limitplane_decisions_total counter",
        'limitplane_decisions_total{gateway="gw-1",scope="candidate:c1",outcome="allowed"} 0',
        'limitplane_decisions_total{gateway="gw-1",scope="candidate:c1",outcome="rejected"} 0',
        'limitplane_decisions_total{gateway="gw-1",scope="candidate:c1",outcome="would_reject"} 1',
        'limitplane_decisions_total{gateway="gw-1",scope="tier:pro",outcome="allowed"} 2',
        'limitplane_decisions_total{gateway="gw-1",scope="tier:pro",outcome="rejected"} 1',
        'limitplane_decisions_total{gateway="gw-1",scope="tier:pro",outcome="would_reject"} 0',
        "# HELP limitplane_degraded_decisions_total Limits decided by their failure policy (open, closed, local) because the store failed, per scope.",
        "# TYPE limitplane_degraded_decisions_total counter",
        'limitplane_degraded_decisions_total{gateway="gw-1",scope="candidate:c1"} 0',
        'limitplane_degraded_decisions_total{gateway="gw-1",scope="tier:pro"} 1',
        "# HELP limitplane_store_failures_total Degraded decisions by the store failure behind them.",
        "# TYPE limitplane_store_failures_total counter",
        'limitplane_store_failures_total{gateway="gw-1",failure="timeout"} 1',
        'limitplane_store_failures_total{gateway="gw-1",failure="store-error"} 0',
        'limitplane_store_failures_total{gateway="gw-1",failure="circuit-open"} 0',
        "# HELP limitplane_decision_sources_total Decisions by who answered.",
        "# TYPE limitplane_decision_sources_total counter",
        'limitplane_decision_sources_total{gateway="gw-1",source="store"} 2',
        'limitplane_decision_sources_total{gateway="gw-1",source="fallback"} 1',
        'limitplane_decision_sources_total{gateway="gw-1",source="denial-cache"} 0',
        'limitplane_decision_sources_total{gateway="gw-1",source="flood-guard"} 0',
        'limitplane_decision_sources_total{gateway="gw-1",source="lease"} 0',
        'limitplane_decision_sources_total{gateway="gw-1",source="no-policy"} 0',
        'limitplane_decision_sources_total{gateway="gw-1",source="rule"} 0',
        "# HELP limitplane_decision_latency_seconds Time to decide one request.",
        "# TYPE limitplane_decision_latency_seconds histogram",
        'limitplane_decision_latency_seconds_bucket{gateway="gw-1",le="0.0001"} 1',
        'limitplane_decision_latency_seconds_bucket{gateway="gw-1",le="0.001"} 1',
        'limitplane_decision_latency_seconds_bucket{gateway="gw-1",le="0.05"} 3',
        'limitplane_decision_latency_seconds_bucket{gateway="gw-1",le="+Inf"} 3',
        'limitplane_decision_latency_seconds_sum{gateway="gw-1"} 0.05128',
        'limitplane_decision_latency_seconds_count{gateway="gw-1"} 3',
        "",
      ].join("\n"),
    );
  });

  it("escapes label values: backslash, double quote and newline", () => {
    expect(escapeLabelValue('a\\b"c\nd')).toBe('a\\\\b\\"c\\nd');
    const metrics = new DecisionMetrics({ wallClock: new ManualClock(WALL_T0) });
    metrics.record(decision(true, [['odd "scope"\\', "enforce", true]]), 1);
    expect(renderPrometheus(metrics.totals())).toContain(
      'limitplane_decisions_total{scope="odd \\"scope\\"\\\\",outcome="allowed"} 1',
    );
  });

  it("with nothing recorded, still writes every family with zeros", () => {
    const text = renderPrometheus(new DecisionMetrics().totals());
    expect(text).toContain('limitplane_decision_latency_seconds_bucket{le="+Inf"} 0');
    expect(text).toContain("limitplane_decision_latency_seconds_count 0");
    expect(text).not.toContain("scope=");
  });

  it.each([
    ["an invalid prefix", { prefix: "9bad" }],
    ["an invalid label name", { constantLabels: { "bad-name": "x" } }],
    ["a reserved label name", { constantLabels: { __name__: "x" } }],
  ])("refuses %s", (_name, options) => {
    expect(() => renderPrometheus(new DecisionMetrics().totals(), options)).toThrow(RangeError);
  });
});
