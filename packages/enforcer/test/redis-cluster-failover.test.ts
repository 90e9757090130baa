/**
 * A replicated Redis Cluster losing a master: three masters with a replica each, started by this
 * file on free ports (never the shared Redis), `cluster-node-timeout` 3000 ms (faster detection
 * fails over spuriously on a busy machine) and `cluster-require-full-coverage no`, the setting
 * docs/failover.md recommends. One master is killed with SIGKILL while the store decides for
 * subjects on every master.
 *
 * Asserted: decisions for subjects on the other masters never fail (the Cluster keeps serving the
 * slots it still covers); decisions on the killed master's slots fail
 * (each failure a StoreUnavailableError, for the failure policy to decide, never retried) until its
 * replica is promoted, and then succeed again on the same client, batched by slot on the new
 * topology, with no restart.
 *
 * The same rounds also go through the enforcer's guard (`GuardedStore`, production breaker
 * settings, every limit failing closed so a degraded decision is visible as a refusal): with a
 * breaker per master, subjects on the other masters see no degraded decision at all, and the
 * subjects on the lost slots are decided by Redis again after the promotion. A guard with one
 * breaker for the whole store runs alongside for comparison (its figures are printed, not asserted:
 * whether its breaker opens depends on how the failures interleave).
 */
import calculateSlot from "cluster-key-slot";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { CircuitBreaker } from "../src/enforcer/circuit-breaker";
import { FailurePolicy } from "../src/enforcer/failure-policy";
import { GuardedStore } from "../src/enforcer/guarded-store";
import type { EnforcerCheck, EnforcerDecision } from "../src/enforcer/types";
import { RedisStore } from "../src/limiter/stores/redis";
import { StoreUnavailableError } from "../src/limiter/stores/store-unavailable-error";
import type { LimitCheck, LimiterStore } from "../src/limiter/types";
import { createRedisClient, type RedisClient } from "../src/publication/redis-clients";
import { tokenBucket } from "../src/testing/policy-factory";
import type { OwnRedisCluster } from "../src/testing/redis-server";
import { waitFor } from "../src/testing/wait-for";
import { appendFailoverReport } from "./support/failover-report";
import { startReplicatedCluster } from "./support/redis";

let cluster: OwnRedisCluster;
let decisions: RedisClient;
const prefix = `${inject("redisKeyPrefix")}clfo:`;

beforeAll(async () => {
  cluster = await startReplicatedCluster();
  decisions = createRedisClient("decisions", {
    url: "redis://127.0.0.1",
    clusterNodes: cluster.nodes,
    // A slow answer on a busy machine is waited for; a dead master fails at once anyway.
    commandTimeoutMs: 2_000,
  });
  await waitFor("the Cluster client to be ready", () =>
    decisions.status === "ready" ? true : undefined,
  );
}, 120_000);

afterAll(async () => {
  decisions?.disconnect();
  await cluster?.stop();
});

describe("a replicated Cluster losing a master", () => {
  it("keeps deciding on the other masters, fails only the lost slots, and returns to them after the promotion", async () => {
    const store = new RedisStore({ client: decisions, keyPrefix: prefix, maxBatchSize: 64 });
    const checks: LimitCheck[] = [
      { scope: "tier:pro", bucket: "account", limit: tokenBucket(1_000, 100), mode: "enforce" },
    ];
    const guardedChecks: EnforcerCheck[] = [
      {
        scope: "tier:pro",
        bucket: "guarded",
        limit: tokenBucket(1_000, 100),
        mode: "enforce",
        onStoreFailure: "closed",
      },
    ];
    const guard = (of: LimiterStore) =>
      new GuardedStore({
        store: of,
        failurePolicy: new FailurePolicy({ expectedGateways: 1 }),
        // As gateways run it: a dead master fails at once; a slow answer is waited for.
        timeoutMs: 50,
        maxWaitMs: 1_000,
        isStoreReachable: () => decisions.status === "ready",
        newBreaker: () => new CircuitBreaker(),
      });
    const perNode = guard(store);
    // The same store seen as one server: one breaker for every master.
    const oneBreaker = guard({
      decide: (input) => store.decide(input),
      peek: (input) => store.peek(input),
    });
    const perNodeElsewhere: EnforcerDecision[] = [];
    const perNodeOnVictim: EnforcerDecision[] = [];
    let oneBreakerDegradedElsewhere = 0;
    const subjects = Array.from({ length: 60 }, (_, i) => `c:fo-${i}`);
    const masterOf = new Map<string, number>();
    for (const subject of subjects) {
      masterOf.set(subject, await cluster.masterPortOf(calculateSlot(store.subjectKey(subject))));
    }
    const victim = masterOf.get(subjects[0] ?? "") ?? 0;
    const onVictim = subjects.filter((subject) => masterOf.get(subject) === victim);
    const elsewhere = subjects.filter((subject) => masterOf.get(subject) !== victim);
    expect(onVictim.length).toBeGreaterThan(0);
    expect(new Set(elsewhere.map((subject) => masterOf.get(subject))).size).toBe(2);
    // Every subject decided once before the kill: the client knows the slots.
    await Promise.all(subjects.map((subject) => store.decide({ subject, checks })));

    const killedAtMs = Date.now();
    let lostSlotsBackAtMs = 0;
    await cluster.killPort(victim);
    const failedElsewhere: unknown[] = [];
    const failedOnVictim: unknown[] = [];
    let rounds = 0;
    await waitFor(
      "the killed master's slots to be decided again",
      async () => {
        rounds++;
        const [others, lost, guardedOthers, guardedLost, oneOthers] = await Promise.all([
          Promise.allSettled(elsewhere.map((subject) => store.decide({ subject, checks }))),
          Promise.allSettled(onVictim.map((subject) => store.decide({ subject, checks }))),
          Promise.all(
            elsewhere.map((subject) => perNode.decide({ subject, checks: guardedChecks })),
          ),
          Promise.all(
            onVictim.map((subject) => perNode.decide({ subject, checks: guardedChecks })),
          ),
          Promise.all(
            elsewhere.map((subject) => oneBreaker.decide({ subject, checks: guardedChecks })),
          ),
          Promise.all(
            onVictim.map((subject) => oneBreaker.decide({ subject, checks: guardedChecks })),
          ),
        ]);
        perNodeElsewhere.push(...guardedOthers);
        perNodeOnVictim.push(...guardedLost);
        oneBreakerDegradedElsewhere += oneOthers.filter((decision) => decision.degraded).length;
        for (const result of others)
          if (result.status === "rejected") failedElsewhere.push(result.reason);
        for (const result of lost)
          if (result.status === "rejected") failedOnVictim.push(result.reason);
        if (!(lost.every((result) => result.status === "fulfilled") && failedOnVictim.length > 0)) {
          return undefined;
        }
        lostSlotsBackAtMs = Date.now();
        return true;
      },
      { timeoutMs: 60_000, intervalMs: 100 },
    );
    expect(failedElsewhere.map(String)).toEqual([]);
    for (const error of failedOnVictim) {
      expect(error, String(error)).toBeInstanceOf(StoreUnavailableError);
    }
    // A breaker per master: not one degraded decision for subjects on the healthy masters.
    expect(perNodeElsewhere.filter((decision) => decision.source !== "store")).toEqual([]);
    expect(perNodeOnVictim.some((decision) => decision.degraded)).toBe(true);
    // The lost slots' breaker closes again by itself (cool-down, then a probe on the new master).
    await waitFor(
      "the guard to decide the lost slots with Redis again",
      async () => {
        const again = await Promise.all(
          onVictim.map((subject) => perNode.decide({ subject, checks: guardedChecks })),
        );
        return again.every((decision) => decision.source === "store") ? true : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 200 },
    );
    // Only the lost master's breaker may have opened (whether it did depends on how many
    // failures the gap held); every other master's stayed closed throughout.
    const opened = [...perNode.nodeBreakers()]
      .filter(([, breaker]) => breaker.snapshot().openCount > 0)
      .map(([node]) => node);
    expect(opened.filter((node) => node !== `127.0.0.1:${victim}`)).toEqual([]);
    expect(perNode.nodeBreakers().size).toBeGreaterThanOrEqual(3);
    // The slot moved to the replica, and the same client decides there.
    const promoted = await cluster.masterPortOf(calculateSlot(store.subjectKey(onVictim[0] ?? "")));
    expect(promoted).not.toBe(victim);
    console.log(
      `cluster failover: ${rounds} rounds, ${failedOnVictim.length} failed decisions on the lost slots, 0 elsewhere; ` +
        `guard with a breaker per master: ${perNodeOnVictim.filter((decision) => decision.degraded).length} degraded on the lost slots, 0 of ${perNodeElsewhere.length} elsewhere; ` +
        `one breaker for the store: ${oneBreakerDegradedElsewhere} degraded elsewhere; opened: ${opened.join(", ") || "none"}`,
    );
    // Printed, never asserted: the time the machine took is a figure for the repeat script.
    await appendFailoverReport({
      kind: "cluster",
      killToDecisionsMs: lostSlotsBackAtMs - killedAtMs,
      failedOnLostSlots: failedOnVictim.length,
      degradedOnLostSlots: perNodeOnVictim.filter((decision) => decision.degraded).length,
      degradedElsewhere: perNodeElsewhere.filter((decision) => decision.source !== "store").length,
    });
  }, 120_000);
});
