/**
 * The building blocks wired as the runtime will wire them, with an in-process store standing in
 * for Redis and a driven clock: the seed's worked example across three gateways, the local stage
 * in front, an outage and the recovery, and what the metrics saw.
 */
import { describe, expect, it } from "vitest";
import { MemoryStore } from "../limiter/stores/memory";
import { ManualTimers } from "../limiter/timers";
import type { DecideInput, LayeredDecision, LimiterStore } from "../limiter/types";
import { prepareSnapshot } from "../policy/prepare";
import { resolveLimits } from "../policy/resolve";
import { exampleSnapshot } from "../testing/policy-factory";
import { CircuitBreaker } from "./circuit-breaker";
import { DecisionMetrics } from "./decision-metrics";
import { FailurePolicy } from "./failure-policy";
import { GuardedStore } from "./guarded-store";
import { buildRateLimitResponse, type RateLimitHttpResult } from "./http-headers";
import { LocalStage } from "./local-stage";
import type { EnforcerDecision, EnforcerInput } from "./types";

const T0 = 1_700_000_000_000;

/** The shared store as seen over a network that can go down: it then never answers. */
class FlakyShared implements LimiterStore {
  isDown = false;
  calls = 0;
  readonly #memory: MemoryStore;

  constructor(clock: ManualTimers) {
    this.#memory = new MemoryStore({ clock });
  }

  decide(input: DecideInput): Promise<LayeredDecision> {
    this.calls++;
    return this.isDown ? new Promise(() => {}) : this.#memory.decide(input);
  }

  peek(input: DecideInput): Promise<LayeredDecision> {
    return this.#memory.peek(input);
  }
}

interface Gateway {
  readonly stage: LocalStage;
  readonly guarded: GuardedStore;
  readonly metrics: DecisionMetrics;
}

function setup() {
  const timers = new ManualTimers(T0);
  const shared = new FlakyShared(timers);
  const gateways: Gateway[] = [0, 1, 2].map(() => ({
    stage: new LocalStage({ clock: timers }),
    guarded: new GuardedStore({
      store: shared,
      failurePolicy: new FailurePolicy({ expectedGateways: 3, clock: timers }),
      breaker: new CircuitBreaker({
        clock: timers,
        consecutiveFailuresToOpen: 2,
        coolDownMs: 1_000,
      }),
      timers,
      clock: timers,
      timeoutMs: 50,
      // As the runtime wires it: a down connection is not waited for (a slow one would be).
      isStoreReachable: () => !shared.isDown,
    }),
    metrics: new DecisionMetrics({ wallClock: timers }),
  }));
  const snapshot = prepareSnapshot(exampleSnapshot());
  // Initech is on the free tier: bursts of 20 at 10 per second, the seed's worked example.
  const resolution = resolveLimits(
    snapshot,
    { customerId: "initech", tier: "free", path: "/v1/things" },
    T0,
    {
      trace: false,
    },
  );
  const input: EnforcerInput = {
    subject: resolution.subject,
    checks: resolution.checks,
    cost: resolution.cost,
  };

  /** One request through one gateway, as the runtime will handle it. */
  async function handle(
    gateway: Gateway,
  ): Promise<{ decision: EnforcerDecision; http: RateLimitHttpResult }> {
    const sentAtMs = timers.nowMs();
    const local = gateway.stage.check(input);
    const decision = local ?? (await gateway.guarded.decide(input));
    if (local === null) gateway.stage.recordSharedDecision(input, decision, sentAtMs);
    gateway.metrics.record(decision, (timers.nowMs() - sentAtMs) * 1000);
    return { decision, http: buildRateLimitResponse(decision, input.checks) };
  }

  const at = (index: number): Gateway => {
    const gateway = gateways[index % gateways.length];
    if (gateway === undefined) throw new Error("no gateway");
    return gateway;
  };
  return { timers, shared, gateways, input, handle, at };
}

describe("the building blocks, assembled", () => {
  it("the worked example: 25 simultaneous requests over three gateways admit 20, reject 5 with ~100 ms", async () => {
    const { handle, at, input } = setup();
    expect(input.checks.map((check) => [check.scope, check.mode, check.onStoreFailure])).toEqual([
      ["tier:free", "enforce", "open"],
      ["candidate:free-halved", "dry-run", "open"],
      ["ceiling", "enforce", "local"],
    ]);
    const results = await Promise.all(Array.from({ length: 25 }, (_, i) => handle(at(i))));
    const rejected = results.filter(({ decision }) => !decision.allowed);
    expect(results.length - rejected.length).toBe(20);
    expect(rejected).toHaveLength(5);
    for (const { decision, http } of rejected) {
      expect(decision).toMatchObject({ source: "store", scope: "tier:free", retryAfterMs: 100 });
      expect(http.status).toBe(429);
      expect(http.headers).toMatchObject({
        "RateLimit-Policy": '"tier:free";q=20;w=2, "ceiling";q=10000;w=5',
        RateLimit: '"tier:free";r=0;t=1',
        "Retry-After": "1",
      });
      expect(http.body).toEqual({
        type: "https://iana.org/assignments/http-problem-types#quota-exceeded",
        title: "Quota exceeded",
        status: 429,
        "violated-policies": ["tier:free"],
        code: "RATE_LIMITED",
        scope: "tier:free",
        retryAfterMs: 100,
      });
    }
    // The candidate (bursts of 10 at 5/s), enforced in tier:free's place, would have admitted 10
    // of the 25 and rejected 15: its would-reject count across the gateways says exactly that.
    const wouldReject = [0, 1, 2]
      .flatMap((index) => at(index).metrics.totals().scopes)
      .filter(({ scope }) => scope === "candidate:free-halved")
      .reduce((sum, counts) => sum + counts.wouldReject, 0);
    expect(wouldReject).toBe(15);
  });

  it("after a shared rejection, the gateway answers the same customer locally until the reset", async () => {
    const { handle, at, shared, timers } = setup();
    await Promise.all(Array.from({ length: 21 }, () => handle(at(0))));
    const callsBefore = shared.calls;
    const again = await handle(at(0));
    expect(again.decision).toMatchObject({ allowed: false, source: "denial-cache" });
    expect(again.http.headers["Retry-After"]).toBe("1");
    expect(shared.calls).toBe(callsBefore);
    // Another gateway has no denial cached: it asks the store, which agrees.
    expect((await handle(at(1))).decision).toMatchObject({ allowed: false, source: "store" });
    timers.advance(100);
    expect((await handle(at(0))).decision).toMatchObject({ allowed: true, source: "store" });
  });

  it("an outage: bounded waits, then none; each limit does what it declares; recovery by itself", async () => {
    const { handle, at, shared, timers, gateways } = setup();
    shared.isDown = true;
    const waiting = handle(at(0));
    timers.advance(50);
    const first = await waiting;
    // tier:free fails open; the ceiling falls back to a third of itself locally.
    expect(first.decision).toMatchObject({
      allowed: true,
      degraded: true,
      failure: "timeout",
      scope: "ceiling",
    });
    expect(first.decision.outcomes.map((outcome) => outcome.fallback)).toEqual([
      "open",
      "open",
      "local",
    ]);
    const second = handle(at(0));
    timers.advance(50);
    await second;
    // The breaker is open: answered at once, without the store and without a timer.
    const callsWhileOpen = shared.calls;
    const third = await handle(at(0));
    expect(third.decision.failure).toBe("circuit-open");
    expect(shared.calls).toBe(callsWhileOpen);

    shared.isDown = false;
    timers.advance(1_000);
    const recovered = await handle(at(0));
    expect(recovered.decision).toMatchObject({ source: "store", degraded: false });

    const totals = at(0).metrics.totals();
    expect(totals.degradedByFailure).toEqual({ timeout: 2, "store-error": 0, "circuit-open": 1 });
    expect(totals.scopes).toEqual([
      { scope: "candidate:free-halved", allowed: 4, rejected: 0, wouldReject: 0, degraded: 3 },
      { scope: "ceiling", allowed: 4, rejected: 0, wouldReject: 0, degraded: 3 },
      { scope: "tier:free", allowed: 4, rejected: 0, wouldReject: 0, degraded: 3 },
    ]);
    expect(gateways[1]?.metrics.totals().scopes).toEqual([]);
  });
});
