import { describe, expect, it } from "vitest";
import { setStoreTime, storeTimeOf } from "../limiter/stores/store-time";
import { ManualTimers } from "../limiter/timers";
import { type LeaseGrant, type LeaseRequest, LeaseTable, returnLeadMs } from "./lease-table";
import type { EnforcerCheck, EnforcerDecision, EnforcerInput } from "./types";

const account: EnforcerCheck = Object.freeze({
  scope: "tier:pro",
  bucket: "account",
  limit: { algorithm: "token-bucket", capacity: 100, refillPerSec: 10 },
  mode: "enforce",
  onStoreFailure: "local",
} as const);
const ceiling: EnforcerCheck = Object.freeze({
  scope: "ceiling",
  bucket: "ceiling",
  limit: { algorithm: "fixed-window", limit: 1_000, windowMs: 60_000 },
  mode: "enforce",
  onStoreFailure: "open",
} as const);
const CHECKS: readonly EnforcerCheck[] = Object.freeze([account, ceiling]);

function input(checks = CHECKS, cost?: number): EnforcerInput {
  return cost === undefined ? { subject: "c:acme", checks } : { subject: "c:acme", checks, cost };
}

/** The store's admission as the table receives it: `remaining` per check. */
function storeDecision(remaining: readonly number[]): EnforcerDecision {
  return {
    allowed: true,
    limit: 100,
    remaining: Math.min(...remaining),
    retryAfterMs: 0,
    resetAfterMs: 0,
    reason: null,
    scope: "tier:pro",
    outcomes: CHECKS.map((check, i) => ({
      allowed: true,
      limit: 100,
      remaining: remaining[i] ?? 0,
      retryAfterMs: 0,
      resetAfterMs: 5_000,
      reason: null,
      scope: check.scope,
      mode: check.mode,
      fallback: null,
    })),
    source: "store",
    degraded: false,
    failure: null,
  };
}

/** The store's answer to a lease: `units` for `lifeMs`, granted at Redis time 0. */
function grantOf(decision: EnforcerDecision, units: number, lifeMs: number): LeaseGrant {
  return { decision, units, lifeMs, grantedAtMs: 0 };
}

function setup(
  options: {
    maxUnits?: number;
    lifeMs?: number;
    maxEntries?: number;
    maxLossMs?: number;
    keepsStoreTime?: boolean;
  } = {},
) {
  const clock = new ManualTimers(10_000);
  const table = new LeaseTable({ ...options, clock, timers: clock });
  const refills: number[] = [];
  const refiller = {
    refill: (_: EnforcerInput, lease: { units: number }) => refills.push(lease.units),
  };
  return { clock, table, refills, refiller };
}

/** Requests for the list: the first through `want` (as the engine does), the rest through `take`. */
function see(ctx: ReturnType<typeof setup>, count: number): void {
  for (let i = 0; i < count; i++) {
    if (ctx.table.take(input(), ctx.refiller) === null && i === 0) ctx.table.want(input());
  }
}

/** Demand over a whole lifetime (4 requests), then a request that asks for a lease, granted. */
function leaseOf(ctx: ReturnType<typeof setup>, units: number, lifeMs = 1_000): void {
  const { table, refiller, clock } = ctx;
  see(ctx, 4);
  clock.advance(1_000);
  expect(table.take(input(), refiller)).toBeNull();
  const wanted = table.want(input());
  expect(wanted.units).toBeGreaterThan(0);
  table.granted(input(), grantOf(storeDecision([90, 900]), units, lifeMs), clock.nowMs());
}

/**
 * One subject's `count` requests, as the engine makes them: a lease when one answers, else a
 * store call asking for one. The store answers every call (the request's own, or a refill after
 * the delay it may hold it back) 5 ms after it was made. Request `i` comes `gapMsAt(i, elapsed)`
 * after the one before, a third more or less at random (from `seed`). Returns the indexes of the
 * requests that went to the store.
 */
function requestsSentToStore(
  seed: number,
  gapMsAt: (index: number, elapsedMs: number) => number,
  count: number,
): number[] {
  const { clock, table } = setup();
  let state = seed;
  const jitter = () => {
    state = (state * 1_103_515_245 + 12_345) % 2_147_483_648;
    return 2 / 3 + ((state / 2_147_483_648) * 2) / 3;
  };
  const answerLater = (units: number, lifeMs: number, delayMs: number) => {
    const sentAtMs = clock.nowMs();
    clock.setTimer(
      () => table.granted(input(), grantOf(storeDecision([90, 900]), units, lifeMs), sentAtMs),
      delayMs + 5,
    );
  };
  const refiller = {
    refill: (_: EnforcerInput, lease: LeaseRequest) =>
      answerLater(lease.units, lease.lifeMs, lease.maxDelayMs ?? 0),
  };
  const startMs = clock.nowMs();
  const sentToStore: number[] = [];
  for (let i = 0; i < count; i++) {
    if (table.take(input(), refiller) === null) {
      sentToStore.push(i);
      const wanted = table.want(input());
      if (wanted.units > 0) answerLater(wanted.units, wanted.lifeMs, 0);
    }
    clock.advance(gapMsAt(i, clock.nowMs() - startMs) * jitter());
  }
  return sentToStore;
}

describe("LeaseTable", () => {
  it("asks for nothing until a whole lifetime saw 4 requests, then for twice that", () => {
    const ctx = setup();
    expect(ctx.table.want(input())).toEqual({ units: 0, lifeMs: 0 });
    // A burst on a quiet subject: never leased, however many requests.
    see(ctx, 50);
    expect(ctx.table.want(input()).units).toBe(0);
    ctx.clock.advance(1_000);
    ctx.table.take(input(), ctx.refiller);
    // 51 requests in that lifetime (the first one above, then 50).
    expect(ctx.table.want(input())).toEqual({ units: 102, lifeMs: 1_000 });
    // A refill is in flight: nobody else asks until it is answered.
    ctx.table.take(input(), ctx.refiller);
    expect(ctx.table.want(input()).units).toBe(0);
    // 3 in a lifetime is too few; and a lifetime with nothing forgets what came before.
    const quiet = setup();
    see(quiet, 3);
    quiet.clock.advance(1_000);
    quiet.table.take(input(), quiet.refiller);
    expect(quiet.table.want(input()).units).toBe(0);
    see(quiet, 10);
    quiet.clock.advance(2_500);
    quiet.table.take(input(), quiet.refiller);
    expect(quiet.table.want(input()).units).toBe(0);
  });

  it("admits from a grant until its units are spent, then asks the store again", () => {
    const ctx = setup();
    leaseOf(ctx, 3);
    const admitted = [1, 2, 3].map(() => ctx.table.take(input(), ctx.refiller));
    expect(admitted.map((decision) => decision?.source)).toEqual(["lease", "lease", "lease"]);
    expect(admitted.map((decision) => decision?.allowed)).toEqual([true, true, true]);
    // `remaining` counts down from what the store reported, per check.
    expect(admitted.map((decision) => decision?.outcomes.map((o) => o.remaining))).toEqual([
      [89, 899],
      [88, 898],
      [87, 897],
    ]);
    expect(admitted[0]?.scope).toBe("tier:pro");
    expect(ctx.table.take(input(), ctx.refiller)).toBeNull();
    expect(ctx.table.figures()).toMatchObject({ admitted: 3, grantedUnits: 3, expiredUnits: 0 });
  });

  it("reports a leased admission at the time Redis charged its unit (the traffic record's time)", () => {
    const ctx = setup({ keepsStoreTime: true });
    see(ctx, 4);
    ctx.clock.advance(1_000);
    ctx.table.take(input(), ctx.refiller);
    ctx.table.want(input());
    const granting = storeDecision([90, 900]);
    setStoreTime(granting, { nowMs: 1_765_000_000_123.456, indexInCall: 3 });
    ctx.table.granted(input(), grantOf(granting, 2, 1_000), ctx.clock.nowMs());
    const leased = ctx.table.take(input(), ctx.refiller);
    expect(leased?.source).toBe("lease");
    expect(storeTimeOf(leased as object)).toEqual({ nowMs: 1_765_000_000_123.456, indexInCall: 3 });
  });

  it("stops spending a grant its return lead before its lifetime ends, and counts its unspent units", () => {
    const ctx = setup();
    leaseOf(ctx, 10, 500);
    expect(ctx.table.take(input(), ctx.refiller)?.source).toBe("lease");
    // A tenth of the lifetime (at most 50 ms) is left for the return to reach the store.
    expect(returnLeadMs(500)).toBe(50);
    expect(returnLeadMs(100)).toBe(10);
    expect(returnLeadMs(5_000)).toBe(50);
    ctx.clock.advance(449);
    expect(ctx.table.take(input(), ctx.refiller)?.source).toBe("lease");
    ctx.clock.advance(1);
    expect(ctx.table.take(input(), ctx.refiller)).toBeNull();
    expect(ctx.table.figures()).toMatchObject({ admitted: 2, grantedUnits: 10, expiredUnits: 8 });
  });

  it("measures the lifetime from before the call was sent, not from the answer", () => {
    const ctx = setup();
    const { table, refiller, clock } = ctx;
    see(ctx, 4);
    clock.advance(1_000);
    table.take(input(), refiller);
    expect(table.want(input()).units).toBeGreaterThan(0);
    const sentAtMs = clock.nowMs();
    clock.advance(300); // the store call took 300 ms
    table.granted(input(), grantOf(storeDecision([90, 900]), 5, 400), sentAtMs);
    expect(table.take(input(), refiller)?.source).toBe("lease");
    clock.advance(100);
    expect(table.take(input(), refiller)).toBeNull();
  });

  it("spends only on the very list of checks it was granted for, and only at most its units", () => {
    const ctx = setup();
    leaseOf(ctx, 5);
    const otherList = Object.freeze([account]);
    expect(ctx.table.take(input(otherList), ctx.refiller)).toBeNull();
    expect(ctx.table.take({ ...input(), subject: "c:globex" }, ctx.refiller)).toBeNull();
    expect(ctx.table.take(input(CHECKS, 6), ctx.refiller)).toBeNull();
    expect(ctx.table.take(input(CHECKS, 5), ctx.refiller)?.source).toBe("lease");
    expect(ctx.table.take(input(CHECKS, 0.5), ctx.refiller)).toBeNull();
  });

  it("asks for a refill, once, when a grant is half spent, and spends the older grant first", () => {
    const ctx = setup();
    leaseOf(ctx, 4);
    ctx.table.take(input(), ctx.refiller);
    ctx.table.take(input(), ctx.refiller);
    expect(ctx.refills).toEqual([]);
    ctx.table.take(input(), ctx.refiller);
    expect(ctx.refills).toHaveLength(1);
    ctx.table.take(input(), ctx.refiller);
    expect(ctx.refills).toHaveLength(1);
    ctx.table.granted(input(), grantOf(storeDecision([80, 800]), 6, 1_000), ctx.clock.nowMs());
    const spent = Array.from({ length: 7 }, () => ctx.table.take(input(), ctx.refiller)?.source);
    expect(spent).toEqual(["lease", "lease", "lease", "lease", "lease", "lease", undefined]);
    expect(ctx.table.figures()).toMatchObject({ admitted: 10, grantedUnits: 10, expiredUnits: 0 });
  });

  it("asks for the next grant with a fifth of its lifetime left when requests come close together", () => {
    const ctx = setup();
    // 50 requests over the last lifetime: one every 20 ms, so a fifth of the lifetime (200 ms)
    // holds many of them.
    see(ctx, 50);
    ctx.clock.advance(1_000);
    expect(ctx.table.take(input(), ctx.refiller)).toBeNull();
    expect(ctx.table.want(input()).units).toBe(100);
    ctx.table.granted(input(), grantOf(storeDecision([90, 900]), 1_000, 1_000), ctx.clock.nowMs());
    for (let i = 0; i < 37; i++) {
      ctx.clock.advance(20);
      ctx.table.take(input(), ctx.refiller);
    }
    ctx.clock.advance(19);
    ctx.table.take(input(), ctx.refiller);
    expect(ctx.refills).toEqual([]);
    // 760 ms: a fifth of the 950 ms the grant is spent for (its lifetime less the return lead)
    // left.
    ctx.clock.advance(1);
    ctx.table.take(input(), ctx.refiller);
    expect(ctx.refills).toHaveLength(1);
  });

  it("asks earlier for a subject whose requests are further apart, so the last request a grant admits asks", () => {
    // 5 requests over the last lifetime: one every 200 ms. The grant is spent for 950 ms (its
    // lifetime less the return lead). With a fifth of that left (760 ms), a request at 750 ms
    // would not ask and the next one, at 950 ms or a little later, could find the grant ended.
    // It asks with twice the gap left: from 550 ms on.
    const ctx = setup();
    see(ctx, 5);
    ctx.clock.advance(1_000);
    ctx.table.take(input(), ctx.refiller);
    ctx.table.want(input());
    ctx.table.granted(input(), grantOf(storeDecision([90, 900]), 100, 1_000), ctx.clock.nowMs());
    for (const stepMs of [200, 200, 149]) {
      ctx.clock.advance(stepMs);
      ctx.table.take(input(), ctx.refiller);
    }
    expect(ctx.refills).toEqual([]);
    ctx.clock.advance(1);
    ctx.table.take(input(), ctx.refiller);
    expect(ctx.refills).toEqual([10]);

    // 4 a lifetime (250 ms apart): half the lifetime, the most it asks ahead.
    const slower = setup();
    leaseOf(slower, 100);
    for (const stepMs of [250, 199]) {
      slower.clock.advance(stepMs);
      slower.table.take(input(), slower.refiller);
    }
    expect(slower.refills).toEqual([]);
    slower.clock.advance(1);
    slower.table.take(input(), slower.refiller);
    expect(slower.refills).toEqual([8]);
  });

  it("asks for the next grant at once when Redis gave the grant a shorter life than the gap between requests", () => {
    const ctx = setup();
    see(ctx, 4);
    ctx.clock.advance(1_000);
    ctx.table.take(input(), ctx.refiller);
    ctx.table.want(input());
    // A token bucket's reservation joined to an earlier one that ends in 150 ms, where the
    // subject's requests come 250 ms apart: its next request would find the grant ended.
    ctx.table.granted(input(), grantOf(storeDecision([90, 900]), 100, 150), ctx.clock.nowMs());
    expect(ctx.table.take(input(), ctx.refiller)?.source).toBe("lease");
    expect(ctx.refills).toEqual([8]);
  });

  it("keeps a lease down to 2 requests a lifetime, where getting one takes 4", () => {
    const ctx = setup();
    leaseOf(ctx, 100);
    // The lifetime after the grant (which ends at 12,000) sees 2 requests.
    ctx.clock.advance(400);
    ctx.table.take(input(), ctx.refiller);
    ctx.clock.advance(600);
    // 12,000: the grant has ended; the next one is asked for on 2 requests' demand, 4 units.
    expect(ctx.table.take(input(), ctx.refiller)).toBeNull();
    expect(ctx.table.want(input())).toEqual({ units: 4, lifeMs: 1_000 });
    ctx.table.refillFailed(input());
    // A whole lifetime after the last grant ended, the subject is new again: 3 is too few.
    ctx.clock.advance(100);
    ctx.table.take(input(), ctx.refiller);
    ctx.table.take(input(), ctx.refiller);
    ctx.clock.advance(900);
    expect(ctx.table.take(input(), ctx.refiller)).toBeNull();
    expect(ctx.table.want(input()).units).toBe(0);
  });

  it("lets the store hold a refill back a fiftieth of the lifetime, at most 20 ms, and never a request's own call", () => {
    const delays = [30, 500, 1_000, 10_000].map((lifeMs) => {
      const ctx = setup({ lifeMs });
      const asked: LeaseRequest[] = [];
      const refiller = { refill: (_: EnforcerInput, lease: LeaseRequest) => asked.push(lease) };
      see(ctx, 4);
      ctx.clock.advance(lifeMs);
      expect(ctx.table.take(input(), refiller)).toBeNull();
      // The request waits on this call: the store must send it at once.
      const wanted = ctx.table.want(input());
      expect(wanted.maxDelayMs).toBeUndefined();
      ctx.table.granted(input(), grantOf(storeDecision([90, 900]), 4, lifeMs), ctx.clock.nowMs());
      for (let i = 0; i < 3; i++) ctx.table.take(input(), refiller);
      expect(asked).toHaveLength(1);
      return asked[0]?.maxDelayMs;
    });
    expect(delays).toEqual([0, 10, 20, 20]);
  });

  it("a refill that failed lets the next request ask again", () => {
    const ctx = setup();
    see(ctx, 4);
    ctx.clock.advance(1_000);
    ctx.table.take(input(), ctx.refiller);
    expect(ctx.table.want(input()).units).toBeGreaterThan(0);
    expect(ctx.table.want(input()).units).toBe(0);
    ctx.table.refillFailed(input());
    expect(ctx.table.want(input()).units).toBeGreaterThan(0);
  });

  it("gives every grant's unspent units back once: when spent past, when its time is up, on clear()", () => {
    const clock = new ManualTimers(10_000);
    const returns: { units: number; grantedAtMs: number; lifeMs: number }[] = [];
    let settle: (units: number) => void = () => {};
    const delays: number[] = [];
    const table = new LeaseTable({
      clock,
      timers: clock,
      returner: {
        giveBack: (returned, lease, settled) => {
          expect(returned).toMatchObject({ subject: "c:acme", checks: CHECKS, cost: lease.units });
          returns.push({
            units: lease.units,
            grantedAtMs: lease.grantedAtMs,
            lifeMs: lease.lifeMs,
          });
          delays.push(lease.maxDelayMs ?? 0);
          settle = settled;
        },
      },
    });
    const ctx = { clock, table, refills: [] as number[], refiller: { refill: () => 0 } };
    see(ctx, 4);
    clock.advance(1_000);
    table.take(input(), ctx.refiller);
    table.want(input());
    const granting = { decision: storeDecision([90, 900]), units: 5, lifeMs: 1_000 };
    table.granted(input(), { ...granting, grantedAtMs: 1_765_000_000_123.5 }, clock.nowMs());
    table.take(input(), ctx.refiller);
    // A quiet subject: nobody spends the other 4. The sweep gives them back once the grant's
    // spending time (its lifetime less the return lead) is over, naming the grant.
    clock.advance(949);
    expect(returns).toEqual([]);
    clock.advance(30);
    expect(returns).toEqual([{ units: 4, grantedAtMs: 1_765_000_000_123.5, lifeMs: 1_000 }]);
    expect(table.figures()).toMatchObject({ returningUnits: 4, returnedUnits: 0 });
    // Nobody waits on the sweep's return: it may travel with other calls.
    expect(delays).toEqual([table.refillDelayMs]);
    settle(3); // the store took back 3 (say a check's window had moved on)
    expect(table.figures()).toMatchObject({
      returningUnits: 0,
      returnedUnits: 3,
      expiredUnits: 1,
    });
    // Nothing is given back twice, however often the sweep or a request looks. (Long enough
    // that the subject's demand over the slow span is forgotten too: the lease below is new.)
    clock.advance(9_000);
    expect(table.take(input(), ctx.refiller)).toBeNull();
    expect(returns).toHaveLength(1);

    // A new snapshot: every lease's unspent units go back at once.
    see(ctx, 4);
    clock.advance(1_000);
    table.take(input(), ctx.refiller);
    table.want(input());
    table.granted(input(), { ...granting, units: 6, grantedAtMs: 2 }, clock.nowMs());
    table.take(input(), ctx.refiller);
    table.clear();
    expect(returns.at(-1)).toEqual({ units: 5, grantedAtMs: 2, lifeMs: 1_000 });
    // A grant that arrives after its lease was dropped is given back whole.
    table.granted(input(), { ...granting, units: 9, grantedAtMs: 3 }, clock.nowMs());
    expect(returns.at(-1)).toEqual({ units: 9, grantedAtMs: 3, lifeMs: 1_000 });
    clock.advance(5_000);
    expect(returns).toHaveLength(3);
  });

  it("leases no limit that refills under 2 units in half of maxLossMs, and caps grants at that", () => {
    const ctx = setup({ maxLossMs: 60_000 });
    const leaseWanted = (limit: EnforcerCheck["limit"]): number => {
      const checks = Object.freeze([{ ...account, limit }]);
      const request = input(checks);
      for (let i = 0; i < 40; i++) {
        if (ctx.table.take(request, ctx.refiller) === null && i === 0) ctx.table.want(request);
      }
      ctx.clock.advance(1_000);
      ctx.table.take(request, ctx.refiller);
      const wanted = ctx.table.want(request).units;
      ctx.table.refillFailed(request);
      return wanted;
    };
    // A daily quota shaped as a bucket of 50 refilled over 3 hours: never leased.
    expect(
      leaseWanted({ algorithm: "token-bucket", capacity: 50, refillPerSec: 50 / 10_800 }),
    ).toBe(0);
    // 1,000 a day in a window: 0.35 units in 30 s, never leased.
    expect(leaseWanted({ algorithm: "fixed-window", limit: 1_000, windowMs: 86_400_000 })).toBe(0);
    // 0.1 a second refills 3 units in 30 s: grants of at most 3.
    expect(leaseWanted({ algorithm: "token-bucket", capacity: 100, refillPerSec: 0.1 })).toBe(3);
    // 600 a minute (10 a second): 300 in 30 s, more than the demand of 80 this asks for.
    expect(leaseWanted({ algorithm: "sliding-window", limit: 600, windowMs: 60_000 })).toBe(80);
    expect(() => new LeaseTable({ lifeMs: 1_000, maxLossMs: 1_999 })).toThrow(/leases\.maxLossMs/);
  });

  it("gives back, once, what a grant's subject will not spend before it ends", () => {
    const clock = new ManualTimers(10_000);
    const returns: { units: number; delayMs: number }[] = [];
    const table = new LeaseTable({
      clock,
      timers: clock,
      returner: {
        giveBack: (_, lease) =>
          returns.push({ units: lease.units, delayMs: lease.maxDelayMs ?? 0 }),
      },
    });
    const refiller = { refill: () => 0 };
    // 10 requests over a lifetime, 100 ms apart: a grant of 20 for 1 s.
    for (let i = 0; i < 10; i++) {
      if (table.take(input(), refiller) === null && i === 0) table.want(input());
      clock.advance(100);
    }
    expect(table.take(input(), refiller)).toBeNull();
    expect(table.want(input()).units).toBe(20);
    table.granted(input(), grantOf(storeDecision([90, 900]), 20, 1_000), clock.nowMs());
    for (let i = 0; i < 7; i++) {
      clock.advance(100);
      expect(table.take(input(), refiller)?.source).toBe("lease");
    }
    expect(returns).toEqual([]);
    // 800 ms: 150 ms of its 950 are left, 200 ms (two gaps) of lead. It keeps what two more
    // requests and one spare need (3 of its 12), and gives the other 9 back at once, held for
    // company.
    clock.advance(100);
    expect(table.take(input(), refiller)?.source).toBe("lease");
    expect(returns).toEqual([{ units: 9, delayMs: table.refillDelayMs }]);
    clock.advance(100);
    expect(table.take(input(), refiller)?.source).toBe("lease");
    expect(returns).toHaveLength(1);
  });

  it("leases a window for a fifth of it at most, and not a window under 100 ms", () => {
    const ctx = setup();
    const leaseAsked = (limit: EnforcerCheck["limit"]): LeaseRequest => {
      const checks = Object.freeze([{ ...account, limit }]);
      const request = input(checks);
      for (let i = 0; i < 40; i++) {
        if (ctx.table.take(request, ctx.refiller) === null && i === 0) ctx.table.want(request);
      }
      ctx.clock.advance(1_000);
      ctx.table.take(request, ctx.refiller);
      const asked = ctx.table.want(request);
      ctx.table.refillFailed(request);
      return asked;
    };
    // 1 s windows: 200 ms leases, and the units wanted for them (40 a second, twice over).
    expect(leaseAsked({ algorithm: "fixed-window", limit: 1_000, windowMs: 1_000 })).toEqual({
      units: 16,
      lifeMs: 200,
    });
    expect(leaseAsked({ algorithm: "sliding-window", limit: 1_000, windowMs: 60_000 })).toEqual({
      units: 80,
      lifeMs: 1_000,
    });
    expect(leaseAsked({ algorithm: "fixed-window", limit: 1_000, windowMs: 99 }).units).toBe(0);
  });

  it("clear() drops every lease (a new policy) and counts their units expired", () => {
    const ctx = setup();
    leaseOf(ctx, 7);
    ctx.table.take(input(), ctx.refiller);
    ctx.table.clear();
    expect(ctx.table.take(input(), ctx.refiller)).toBeNull();
    expect(ctx.table.figures()).toMatchObject({ grantedUnits: 7, expiredUnits: 6, subjects: 0 });
  });

  it("holds at most maxEntries subjects; an evicted subject's grant ends when its lifetime does", () => {
    const ctx = setup({ maxEntries: 2 });
    leaseOf(ctx, 3);
    ctx.table.want({ ...input(), subject: "c:globex" });
    // Two subjects: both held.
    expect(ctx.table.figures()).toMatchObject({ subjects: 2, expiredUnits: 0 });
    expect(ctx.table.take(input(), ctx.refiller)?.source).toBe("lease");
    // acme was just used: a third subject drops globex, not acme.
    ctx.table.want({ ...input(), subject: "c:initech" });
    expect(ctx.table.figures()).toMatchObject({ subjects: 2, expiredUnits: 0 });
    expect(ctx.table.take(input(), ctx.refiller)?.source).toBe("lease");
    ctx.table.want({ ...input(), subject: "c:globex" });
    ctx.table.want({ ...input(), subject: "c:umbrella" });
    expect(ctx.table.figures()).toMatchObject({ subjects: 2, expiredUnits: 0 });
    expect(ctx.table.take(input(), ctx.refiller)).toBeNull();
    // Its unspent unit is retired by the sweep once the grant's spending time is over.
    ctx.clock.advance(1_000);
    expect(ctx.table.figures()).toMatchObject({ subjects: 2, expiredUnits: 1 });
  });

  it("caps what it asks for at maxUnits, and leases no list with a sliding log, a leaky meter or a dry-run limit", () => {
    const ctx = setup({ maxUnits: 3 });
    see(ctx, 10);
    ctx.clock.advance(1_000);
    ctx.table.take(input(), ctx.refiller);
    expect(ctx.table.want(input()).units).toBe(3);
    const log = Object.freeze([
      { ...account, limit: { algorithm: "sliding-log", limit: 10, windowMs: 1_000 } } as const,
    ]);
    const meter = Object.freeze([
      { ...account, limit: { algorithm: "leaky-meter", burst: 10, drainPerSec: 1 } } as const,
    ]);
    const withDryRun = Object.freeze([account, { ...ceiling, mode: "dry-run" } as const]);
    for (const list of [log, meter, withDryRun]) {
      for (let i = 0; i < 3; i++) expect(ctx.table.want(input(list)).units).toBe(0);
    }
  });

  it("answers every request of a subject sending 3 to 5 a second from leases, once leased", () => {
    // Leased first at 5 a second, then 260 requests at each rate. Before the refill followed the
    // gap and a leased subject kept its lease down to 2 a lifetime, 6, 5, 18 and 121 of them
    // waited on the store.
    for (const gapMs of [200, 222, 250, 333]) {
      const storeCalls = requestsSentToStore(gapMs, (i) => (i < 40 ? 200 : gapMs), 300);
      expect({ gapMs, storeCalls: storeCalls.filter((i) => i >= 40) }).toEqual({
        gapMs,
        storeCalls: [],
      });
    }
  });

  it("leases a subject sending 1 to 3 a second for 4 lifetimes, once 4 lifetimes saw 4 of its requests", () => {
    // Too slow for a lease counted over one lifetime: before slow leases, every one of these
    // requests waited on the store. Now only those of the first span or two do (the demand is
    // counted over whole spans of 4 lifetimes), then none, at any pace from 1 to 3 a second.
    for (const gapMs of [333, 500, 750, 1_000]) {
      const storeCalls = requestsSentToStore(gapMs, () => gapMs, 160);
      const leasedFrom = Math.ceil(8_000 / ((gapMs * 2) / 3));
      expect({ gapMs, storeCalls: storeCalls.filter((i) => i >= leasedFrom) }).toEqual({
        gapMs,
        storeCalls: [],
      });
    }
    const ctx = setup();
    see(ctx, 2);
    ctx.clock.advance(1_000);
    see(ctx, 2);
    ctx.clock.advance(3_000);
    ctx.table.take(input(), ctx.refiller);
    // 4 requests over the last 4 lifetimes, 2 in the last: leased for 4 lifetimes, twice that.
    expect(ctx.table.want(input())).toEqual({ units: 8, lifeMs: 4_000 });
  });

  it("asks ahead by the gap it sees now when a subject's requests slow down within a lifetime", () => {
    // Ten slowdowns: 2 s at 10 a second (100 ms apart), then 2 s at 4 a second (250 ms apart).
    // The last lifetime's demand says 100 ms, so only the gap seen since the lifetime began tells
    // the grant's last request to ask for the next. Without it, 2 of the slow requests waited on
    // the store (5 before the refill followed the gap at all).
    const storeCalls = requestsSentToStore(
      7,
      (_, elapsedMs) => (Math.floor(elapsedMs / 2_000) % 2 === 0 ? 100 : 250),
      160,
    );
    // The first requests (before a whole lifetime's demand) go to the store; none after.
    expect(storeCalls.filter((i) => i >= 20)).toEqual([]);
  });

  it("refuses options out of range, naming the option", () => {
    expect(() => new LeaseTable({ maxUnits: 0 })).toThrow(/leases\.maxUnits/);
    expect(() => new LeaseTable({ maxUnits: 1.5 })).toThrow(/leases\.maxUnits/);
    expect(() => new LeaseTable({ lifeMs: 0 })).toThrow(/leases\.lifeMs/);
    expect(() => new LeaseTable({ lifeMs: Number.NaN })).toThrow(/leases\.lifeMs/);
    expect(() => new LeaseTable({ maxEntries: -1 })).toThrow(/leases\.maxEntries/);
    expect(() => new LeaseTable({ maxEntries: 1 })).toThrow(/leases\.maxEntries/);
  });
});
