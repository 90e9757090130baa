import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DecisionEngine } from "../src/enforcer/decision-engine";
import { createEnforcer } from "../src/enforcer/enforcer";
import { RedisStore } from "../src/limiter/stores/redis";
import { ManualTimers } from "../src/limiter/timers";
import { prepareSnapshot } from "../src/policy/prepare";
import type { RedisClient } from "../src/publication/redis-clients";
import { exampleSnapshot, tokenBucket } from "../src/testing/policy-factory";
import { OwnRedisServer } from "../src/testing/redis-server";
import { waitFor } from "../src/testing/wait-for";
import { readyRedis } from "./support/redis";

/*
 * Leases as the runtime uses them (DecisionEngine on the Redis store), on a Redis of the test's
 * own so it can be stopped: a busy customer is served from leases; a new snapshot drops them; a
 * lease held when Redis goes down keeps admitting, exactly, until it ends, and then each limit's
 * failure policy answers.
 */

const request = { customerId: "acme-leased", tier: "pro", method: "GET", path: "/v1/things" };

describe("DecisionEngine with leases, on the Redis store", () => {
  let server: OwnRedisServer;
  let client: RedisClient;

  beforeAll(async () => {
    server = await OwnRedisServer.start();
    client = await readyRedis("decisions", server.url);
  });

  afterAll(async () => {
    client.disconnect();
    await server.stop();
  });

  function setup(version: { current: number }) {
    const timers = new ManualTimers(1_000);
    const snapshots = new Map<number, ReturnType<typeof prepareSnapshot>>();
    const snapshotOf = (v: number) => {
      let prepared = snapshots.get(v);
      if (prepared === undefined) {
        prepared = prepareSnapshot(
          exampleSnapshot(
            (policy) => {
              const pro = policy.tiers.find((tier) => tier.name === "pro");
              if (pro !== undefined) pro.limit = tokenBucket(1_000, 0.001);
            },
            { version: v },
          ),
        );
        snapshots.set(v, prepared);
      }
      return prepared;
    };
    const engine = new DecisionEngine({
      store: new RedisStore({
        client,
        keyPrefix: `leases-${Math.random().toString(36).slice(2)}:`,
      }),
      snapshot: () => snapshotOf(version.current),
      expectedGateways: 2,
      isStoreReachable: () => client.status === "ready",
      timeoutMs: 50,
      maxWaitMs: 200,
      clock: timers,
      timers,
      localStage: false,
      // The tier refills 1 unit in 1,000 s: leased only with the loss bound as high as it goes.
      leases: { maxLossMs: 86_400_000 },
    });
    return { engine, timers };
  }

  /** `count` requests one after another; their decisions' sources. */
  async function send(engine: DecisionEngine, count: number): Promise<string[]> {
    const sources: string[] = [];
    for (let i = 0; i < count; i++) sources.push((await engine.check(request)).decision.source);
    return sources;
  }

  it("serves a customer busy over a whole lifetime from leases, counting remaining down", async () => {
    const { engine, timers } = setup({ current: 1 });
    expect(await send(engine, 5)).toEqual(Array(5).fill("store"));
    timers.advance(1_000);
    // The first request of the next lifetime asks for a lease (twice the 5 seen), then leases pay.
    const results = [];
    for (let i = 0; i < 6; i++) results.push(await engine.check(request));
    expect(results.map((result) => result.decision.source)).toEqual([
      "store",
      "lease",
      "lease",
      "lease",
      "lease",
      "lease",
    ]);
    // Within one tier: what Redis said after the granting request, less the lease's spending.
    const remaining = results.map((result) => result.http.headers["X-RateLimit-Remaining"]);
    expect(remaining.map(Number)).toEqual([994, 993, 992, 991, 990, 989]);
    expect(engine.leases?.figures()).toMatchObject({ admitted: 5, grantedUnits: 10 });
  });

  it("retires every lease when a new snapshot is in force, giving its units back, and asks Redis again", async () => {
    const version = { current: 1 };
    const { engine, timers } = setup(version);
    await send(engine, 5);
    timers.advance(1_000);
    expect(await send(engine, 3)).toEqual(["store", "lease", "lease"]);
    version.current = 2;
    const next = await engine.check(request);
    expect(next.decision.source).toBe("store");
    // 1,000 - 6 requests from the store - 10 granted = 984 in Redis; the 8 unspent went back
    // ahead of this request (the same connection, in order): 992, and this request took one.
    expect(next.http.headers["X-RateLimit-Remaining"]).toBe("991");
    await waitFor("the return's answer", () =>
      engine.leases?.figures().returningUnits === 0 ? true : undefined,
    );
    expect(engine.leases?.figures()).toMatchObject({
      grantedUnits: 10,
      returnedUnits: 8,
      expiredUnits: 0,
    });
  });

  it("keeps admitting from a lease while Redis is down, only until the lease ends", async () => {
    const { engine, timers } = setup({ current: 1 });
    await send(engine, 5);
    timers.advance(1_000);
    expect(await send(engine, 2)).toEqual(["store", "lease"]);
    await server.stop();
    await new Promise<void>((resolve) => {
      if (client.status !== "ready") resolve();
      else client.once("close", () => resolve());
    });
    try {
      // 9 units left of the grant of 10: spent without Redis, exactly.
      expect(await send(engine, 9)).toEqual(Array(9).fill("lease"));
      // Spent: the failure policy answers.
      expect(await send(engine, 1)).toEqual(["fallback"]);
    } finally {
      await server.restart();
      await new Promise<void>((resolve) => {
        if (client.status === "ready") resolve();
        else client.once("ready", () => resolve());
      });
    }
    // A lease that ends unspent is not spent after its end, Redis down or not.
    const later = setup({ current: 1 });
    await send(later.engine, 5);
    later.timers.advance(1_000);
    expect(await send(later.engine, 2)).toEqual(["store", "lease"]);
    later.timers.advance(1_000);
    expect(await send(later.engine, 1)).toEqual(["store"]);
  });
});

describe("Enforcer.stop with lease refills held back", () => {
  it("sends them while its Redis connections are still open, before it closes them", async () => {
    const server = await OwnRedisServer.start();
    const statusesAtSend: string[] = [];
    try {
      const enforcer = await createEnforcer({
        redis: { url: server.url, keyPrefix: `stop-held-${Math.random().toString(36).slice(2)}:` },
        expectedGateways: 1,
        controlPlane: { bootstrapSnapshot: exampleSnapshot(), startupWaitMs: 200 },
        logger: { log() {} },
        store: (clients, keyPrefix) => {
          const store = new RedisStore({ client: clients.decisions, keyPrefix, maxBatchSize: 64 });
          const sendHeld = store.sendHeld.bind(store);
          store.sendHeld = () => {
            statusesAtSend.push(clients.decisions.status);
            sendHeld();
          };
          return store;
        },
      });
      expect((await enforcer.check(request)).decision.allowed).toBe(true);
      await enforcer.stop();
    } finally {
      await server.stop();
    }
    expect(statusesAtSend).toEqual(["ready"]);
  });
});
