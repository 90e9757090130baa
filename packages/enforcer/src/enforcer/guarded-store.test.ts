import { describe, expect, it } from "vitest";
import { MemoryStore } from "../limiter/stores/memory";
import { ManualTimers, type Timers } from "../limiter/timers";
import type { DecideInput, LayeredDecision, LimiterStore, LimitSpec } from "../limiter/types";
import { CircuitBreaker } from "./circuit-breaker";
import { FailurePolicy } from "./failure-policy";
import { GuardedStore } from "./guarded-store";
import type { EnforcerCheck, EnforcerInput, StoreFailurePolicy } from "./types";

const T0 = 1_700_000_000_000;
const PRO: LimitSpec = { algorithm: "token-bucket", capacity: 20, refillPerSec: 10 };

type Behaviour = "answer" | "hang" | "fail";

/**
 * A shared store that answers from memory, hangs forever, or fails, as the test says; and whose
 * connection is up or down (`isReachable`): a hung store with its connection up is a slow one.
 */
class ScriptedStore implements LimiterStore {
  behaviour: Behaviour = "answer";
  isReachable = true;
  calls = 0;
  readonly #memory: MemoryStore;

  constructor(timers: ManualTimers) {
    this.#memory = new MemoryStore({ clock: timers });
  }

  decide(input: DecideInput): Promise<LayeredDecision> {
    this.calls++;
    switch (this.behaviour) {
      case "answer":
        return this.#memory.decide(input);
      case "hang":
        return new Promise(() => {});
      case "fail":
        return Promise.reject(new Error("connect ECONNREFUSED 127.0.0.1:6379"));
    }
  }

  peek(input: DecideInput): Promise<LayeredDecision> {
    return this.#memory.peek(input);
  }
}

function check(scope: string, onStoreFailure: StoreFailurePolicy): EnforcerCheck {
  return { scope, bucket: scope, limit: PRO, mode: "enforce", onStoreFailure };
}

function setup(
  options: {
    consecutiveFailuresToOpen?: number;
    coolDownMs?: number;
    timers?: Timers;
    clock?: ManualTimers;
  } = {},
) {
  const timers = options.clock ?? new ManualTimers(T0);
  const store = new ScriptedStore(timers);
  const errors: unknown[] = [];
  const guarded = new GuardedStore({
    store,
    failurePolicy: new FailurePolicy({ expectedGateways: 3, clock: timers }),
    timeoutMs: 50,
    maxWaitMs: 1_000,
    isStoreReachable: () => store.isReachable,
    breaker: new CircuitBreaker({
      clock: timers,
      consecutiveFailuresToOpen: options.consecutiveFailuresToOpen ?? 3,
      coolDownMs: options.coolDownMs ?? 2_000,
    }),
    timers: options.timers ?? timers,
    clock: timers,
    onStoreError: (error) => errors.push(error),
  });
  return { timers, store, guarded, errors };
}

/**
 * Manual timers whose `defer` queues work until `endTurn()`, as `setImmediate` does until the
 * event loop's check phase: what the guarded store does "in one turn" is then observable.
 */
function turnTimers(clock: ManualTimers): Timers & { endTurn(): void } {
  let deferred: (() => void)[] = [];
  return {
    setTimer: (callback, delayMs) => clock.setTimer(callback, delayMs),
    defer: (callback) => deferred.push(callback),
    endTurn: () => {
      const due = deferred;
      deferred = [];
      for (const work of due) work();
    },
  };
}

/** A store whose calls the test answers by hand, with `answer`. */
function handAnsweredStore(): {
  store: LimiterStore;
  answer: (decision: LayeredDecision) => void;
} {
  let answer: (decision: LayeredDecision) => void = () => {};
  return {
    store: {
      decide: () =>
        new Promise<LayeredDecision>((resolve) => {
          answer = resolve;
        }),
      peek: () => Promise.reject(new Error("unused")),
    },
    answer: (decision) => answer(decision),
  };
}

/** What the store answers for an admitted sign-in attempt. */
const ADMITTED_SIGN_IN: LayeredDecision = {
  allowed: true,
  limit: 20,
  remaining: 19,
  retryAfterMs: 0,
  resetAfterMs: 100,
  reason: null,
  scope: "address/endpoint:sign-in",
  outcomes: [],
};

const CLOSED_INPUT: EnforcerInput = {
  subject: "a:10.0.0.1",
  checks: [check("address/endpoint:sign-in", "closed")],
};
const OPEN_INPUT: EnforcerInput = { subject: "c:acme", checks: [check("tier:pro", "open")] };

/** Runs a decision whose store call hangs, advancing the timers to the timeout. */
async function decideThroughTimeout(
  guarded: GuardedStore,
  timers: ManualTimers,
  input: EnforcerInput,
) {
  const pending = guarded.decide(input);
  timers.advance(50);
  return pending;
}

describe("GuardedStore", () => {
  it("passes the store's decision through, not degraded", async () => {
    const { guarded } = setup();
    const decision = await guarded.decide(OPEN_INPUT);
    expect(decision).toMatchObject({
      allowed: true,
      remaining: 19,
      source: "store",
      degraded: false,
      failure: null,
    });
    expect(decision.outcomes[0]?.fallback).toBeNull();
  });

  it("closed never admits on timeout", async () => {
    const { guarded, store, timers } = setup();
    store.behaviour = "hang";
    store.isReachable = false;
    const decision = await decideThroughTimeout(guarded, timers, CLOSED_INPUT);
    expect(decision).toMatchObject({
      allowed: false,
      reason: "store-unavailable",
      degraded: true,
      failure: "timeout",
    });
  });

  it("open admits on timeout, marked degraded", async () => {
    const { guarded, store, timers } = setup();
    store.behaviour = "hang";
    store.isReachable = false;
    const decision = await decideThroughTimeout(guarded, timers, OPEN_INPUT);
    expect(decision).toMatchObject({ allowed: true, degraded: true, failure: "timeout" });
  });

  it("does not answer before the timeout while the store's connection is down", async () => {
    const { guarded, store, timers } = setup();
    store.behaviour = "hang";
    store.isReachable = false;
    let isSettled = false;
    void guarded.decide(OPEN_INPUT).then(() => {
      isSettled = true;
    });
    timers.advance(49);
    await new Promise((resolve) => setImmediate(resolve));
    expect(isSettled).toBe(false);
    timers.advance(1);
    await new Promise((resolve) => setImmediate(resolve));
    expect(isSettled).toBe(true);
  });

  it("a reachable store that is slow is waited for, up to maxWaitMs, then decided without", async () => {
    const { guarded, store, timers } = setup();
    store.behaviour = "hang";
    let decision: Awaited<ReturnType<GuardedStore["decide"]>> | undefined;
    void guarded.decide(CLOSED_INPUT).then((settled) => {
      decision = settled;
    });
    timers.advance(999);
    await new Promise((resolve) => setImmediate(resolve));
    expect(decision).toBeUndefined();
    timers.advance(1);
    await new Promise((resolve) => setImmediate(resolve));
    expect(decision).toMatchObject({ allowed: false, degraded: true, failure: "timeout" });
    expect(guarded.breaker.snapshot().consecutiveFailures).toBe(1);
  });

  it("a slow answer after the timeout is the store's decision: not degraded, no failure, counted as slow", async () => {
    const timers = new ManualTimers(T0);
    const { store, answer } = handAnsweredStore();
    const guarded = new GuardedStore({
      store,
      failurePolicy: new FailurePolicy({ expectedGateways: 1, clock: timers }),
      timers,
      clock: timers,
    });
    const pending = guarded.decide(CLOSED_INPUT);
    timers.advance(300);
    answer(ADMITTED_SIGN_IN);
    expect(await pending).toMatchObject({ allowed: true, source: "store", degraded: false });
    expect(guarded.slowDecisionCount).toBe(1);
    expect(guarded.breaker.snapshot()).toMatchObject({ state: "closed", consecutiveFailures: 0 });
  });

  it("the connection dropping while a slow call is waited for fails it at once, as a store error", async () => {
    const { guarded, store, timers } = setup();
    let fail: (error: unknown) => void = () => {};
    store.decide = () =>
      new Promise((_resolve, reject) => {
        fail = reject;
      });
    const pending = guarded.decide(CLOSED_INPUT);
    timers.advance(200);
    fail(new Error("Connection is closed."));
    expect(await pending).toMatchObject({ allowed: false, failure: "store-error" });
  });

  it("a failed batch counts once: decisions in flight together that fail are one failure", async () => {
    const clock = new ManualTimers(T0);
    const timers = turnTimers(clock);
    const { guarded, store } = setup({ clock, timers, consecutiveFailuresToOpen: 3 });
    store.behaviour = "fail";
    // 64 decisions that fail together (one script call, one lost connection).
    const batch = await Promise.all(Array.from({ length: 64 }, () => guarded.decide(OPEN_INPUT)));
    expect(batch.every((decision) => decision.failure === "store-error")).toBe(true);
    expect(guarded.breaker.snapshot()).toMatchObject({ state: "closed", consecutiveFailures: 1 });
    timers.endTurn();
    await guarded.decide(OPEN_INPUT);
    expect(guarded.breaker.snapshot().consecutiveFailures).toBe(2);
    timers.endTurn();
    await guarded.decide(OPEN_INPUT);
    expect(guarded.breaker.state).toBe("open");
  });

  it("calls made one after another that fail count one each, even within one event-loop turn", async () => {
    const clock = new ManualTimers(T0);
    const timers = turnTimers(clock);
    const { guarded, store } = setup({ clock, timers, consecutiveFailuresToOpen: 3 });
    store.behaviour = "fail";
    // A caller awaiting each decision before the next (no turn ends: the store fails at once).
    for (let i = 0; i < 2; i++) await guarded.decide(OPEN_INPUT);
    expect(guarded.breaker.snapshot()).toMatchObject({ state: "closed", consecutiveFailures: 2 });
    await guarded.decide(OPEN_INPUT);
    expect(guarded.breaker.state).toBe("open");
    expect((await guarded.decide(OPEN_INPUT)).failure).toBe("circuit-open");
  });

  it("a late timer whose reply already arrived is no failure: the reply wins after this turn's I/O", async () => {
    const clock = new ManualTimers(T0);
    const timers = turnTimers(clock);
    const { store, answer } = handAnsweredStore();
    const guarded = new GuardedStore({
      store,
      failurePolicy: new FailurePolicy({ expectedGateways: 1, clock }),
      timers,
      clock,
      // Down: without the re-check, the timer would decide without the store at once.
      isStoreReachable: () => false,
    });
    const pending = guarded.decide(CLOSED_INPUT);
    // The loop was blocked for 120 ms: the timer fires late, and the reply sits in the socket.
    clock.advance(120);
    answer(ADMITTED_SIGN_IN);
    await Promise.resolve();
    timers.endTurn();
    expect(await pending).toMatchObject({ allowed: true, source: "store", degraded: false });
    expect(guarded.breaker.snapshot().consecutiveFailures).toBe(0);
  });

  it("a store error is a degraded decision, and its cause is reported once", async () => {
    const { guarded, store, errors } = setup();
    store.behaviour = "fail";
    const decision = await guarded.decide(CLOSED_INPUT);
    expect(decision).toMatchObject({ allowed: false, failure: "store-error" });
    expect(errors).toHaveLength(1);
    expect(String(errors[0])).toContain("ECONNREFUSED");
  });

  it("a dead store costs the timeout only until the circuit opens, then nothing", async () => {
    const { guarded, store, timers } = setup({ consecutiveFailuresToOpen: 3 });
    store.behaviour = "hang";
    store.isReachable = false;
    for (let i = 0; i < 3; i++) await decideThroughTimeout(guarded, timers, OPEN_INPUT);
    expect(store.calls).toBe(3);
    expect(guarded.breaker.state).toBe("open");
    // Answered without advancing time and without calling the store.
    const decision = await guarded.decide(CLOSED_INPUT);
    expect(decision).toMatchObject({ allowed: false, failure: "circuit-open" });
    expect(store.calls).toBe(3);
    expect(timers.pendingCount).toBe(0);
  });

  it("while open, a closed rejection tells the client to wait out the cool-down", async () => {
    const { guarded, store, timers } = setup({ consecutiveFailuresToOpen: 1, coolDownMs: 5_000 });
    store.behaviour = "fail";
    await guarded.decide(OPEN_INPUT);
    timers.advance(1_000);
    const decision = await guarded.decide(CLOSED_INPUT);
    expect(decision.retryAfterMs).toBe(4_000);
  });

  it("recovers by itself: after the cool-down one probe reaches the store, and success closes", async () => {
    const { guarded, store, timers } = setup({ consecutiveFailuresToOpen: 1, coolDownMs: 2_000 });
    store.behaviour = "fail";
    await guarded.decide(OPEN_INPUT);
    expect(guarded.breaker.state).toBe("open");
    store.behaviour = "answer";
    timers.advance(1_999);
    expect((await guarded.decide(OPEN_INPUT)).failure).toBe("circuit-open");
    timers.advance(1);
    const probe = await guarded.decide(OPEN_INPUT);
    expect(probe).toMatchObject({ source: "store", degraded: false });
    expect(guarded.breaker.state).toBe("closed");
    expect((await guarded.decide(OPEN_INPUT)).source).toBe("store");
  });

  it("a failed probe keeps answering without the store for another cool-down", async () => {
    const { guarded, store, timers } = setup({ consecutiveFailuresToOpen: 1, coolDownMs: 2_000 });
    store.behaviour = "hang";
    store.isReachable = false;
    await decideThroughTimeout(guarded, timers, OPEN_INPUT);
    timers.advance(2_000);
    await decideThroughTimeout(guarded, timers, OPEN_INPUT);
    expect(store.calls).toBe(2);
    expect(guarded.breaker.state).toBe("open");
    await guarded.decide(OPEN_INPUT);
    expect(store.calls).toBe(2);
  });

  it("an answer that arrives after the timeout changes nothing", async () => {
    const timers = new ManualTimers(T0);
    const { store: lateStore, answer: resolveLate } = handAnsweredStore();
    const guarded = new GuardedStore({
      store: lateStore,
      failurePolicy: new FailurePolicy({ expectedGateways: 1, clock: timers }),
      timers,
      clock: timers,
      isStoreReachable: () => false,
    });
    const decision = await decideThroughTimeout(guarded, timers, CLOSED_INPUT);
    expect(decision.allowed).toBe(false);
    resolveLate(ADMITTED_SIGN_IN);
    await new Promise((resolve) => setImmediate(resolve));
    expect(decision.allowed).toBe(false);
    expect(guarded.breaker.snapshot().consecutiveFailures).toBe(1);
  });

  it("a logger that throws does not fail the request", async () => {
    const timers = new ManualTimers(T0);
    const store = new ScriptedStore(timers);
    store.behaviour = "fail";
    const guarded = new GuardedStore({
      store,
      failurePolicy: new FailurePolicy({ expectedGateways: 1, clock: timers }),
      timers,
      clock: timers,
      onStoreError: () => {
        throw new Error("logger down");
      },
    });
    await expect(guarded.decide(OPEN_INPUT)).resolves.toMatchObject({ failure: "store-error" });
  });

  it.each([
    { timeoutMs: 50, maxWaitMs: 49 },
    { timeoutMs: 50, maxWaitMs: Number.NaN },
    { timeoutMs: 50, maxWaitMs: 60_001 },
    { timeoutMs: 60_001, maxWaitMs: undefined },
  ])(
    "refuses a wait of $maxWaitMs ms after a timeout of $timeoutMs ms",
    ({ timeoutMs, maxWaitMs }) => {
      const timers = new ManualTimers(T0);
      expect(
        () =>
          new GuardedStore({
            store: new ScriptedStore(timers),
            failurePolicy: new FailurePolicy({ expectedGateways: 1 }),
            timeoutMs,
            maxWaitMs,
          }),
      ).toThrow(RangeError);
    },
  );

  it.each([0, -5, Number.NaN])("refuses a timeout of %d ms", (timeoutMs) => {
    const timers = new ManualTimers(T0);
    expect(
      () =>
        new GuardedStore({
          store: new ScriptedStore(timers),
          failurePolicy: new FailurePolicy({ expectedGateways: 1 }),
          timeoutMs,
        }),
    ).toThrow(RangeError);
  });
});

describe("GuardedStore with a breaker per server", () => {
  /** Subjects starting with "a" live on node A, the rest on node B; A fails, B answers. */
  class TwoNodeStore extends ScriptedStore {
    override decide(input: DecideInput): Promise<LayeredDecision> {
      if (this.nodeOf(input.subject) === "a:1") {
        this.calls++;
        return Promise.reject(new Error("connect ECONNREFUSED 127.0.0.1:7001"));
      }
      return super.decide(input);
    }

    nodeOf(subject: string): string {
      return subject.startsWith("a") ? "a:1" : "b:1";
    }
  }

  it("opens the failing node's circuit only: subjects on the other node keep the store", async () => {
    const timers = new ManualTimers(T0);
    const store = new TwoNodeStore(timers);
    const guarded = new GuardedStore({
      store,
      failurePolicy: new FailurePolicy({ expectedGateways: 1, clock: timers }),
      newBreaker: () => new CircuitBreaker({ clock: timers, consecutiveFailuresToOpen: 3 }),
      timers,
      clock: timers,
    });
    const checks = [check("tier:pro", "open")];
    for (let round = 0; round < 10; round++) {
      const onA = await guarded.decide({ subject: `a-${round}`, checks });
      const onB = await guarded.decide({ subject: `b-${round}`, checks });
      expect(onA.source).toBe("fallback");
      expect(onB.source).toBe("store");
    }
    const states = new Map(
      [...guarded.nodeBreakers()].map(([node, breaker]) => [node, breaker.state]),
    );
    expect(states.get("a:1")).toBe("open");
    expect(states.get("b:1")).toBe("closed");
    // Open for A: answered without calling the store (3 calls opened it, none since).
    expect(store.calls).toBe(3 + 10);
  });
});
