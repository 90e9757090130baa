/**
 * `durability: "replicated"` on a Redis Cluster with a replica per master (three of each, this
 * file's own on free ports; never the shared Redis). A replicated decision runs on the master that
 * owns its slot and `WAIT` follows on that same connection, so it counts the decision's writes.
 *
 * Asserted:
 * 1. A replicated limit on a subject of each master, hammered with three times its capacity at
 *    once, admits exactly its capacity, every decision acknowledged (none failed).
 * 2. With one master's replica frozen (SIGSTOP: no acknowledgement), every replicated decision on
 *    that master's slots fails with NOREPLICAS, and through the enforcer's guard falls to its
 *    failure policy (`closed`: refused, degraded), while the same limit on the other masters is
 *    still admitted and acknowledged. A WAIT sent to any node but the slot's master would count
 *    nothing, answer at once and let those decisions through: this is what fails then.
 * 3. The replica resumes and the frozen master's subject is decided by Redis again, admitting
 *    nothing beyond its capacity.
 */
import calculateSlot from "cluster-key-slot";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { CircuitBreaker } from "../src/enforcer/circuit-breaker";
import { FailurePolicy } from "../src/enforcer/failure-policy";
import { GuardedStore } from "../src/enforcer/guarded-store";
import type { EnforcerCheck, EnforcerInput } from "../src/enforcer/types";
import { RedisStore } from "../src/limiter/stores/redis";
import { StoreUnavailableError } from "../src/limiter/stores/store-unavailable-error";
import type { DecideInput } from "../src/limiter/types";
import { createRedisClient, type RedisClient } from "../src/publication/redis-clients";
import type { OwnRedisCluster } from "../src/testing/redis-server";
import { waitFor } from "../src/testing/wait-for";
import { startReplicatedCluster } from "./support/redis";

const CAPACITY = 10;
const prefix = `${inject("redisKeyPrefix")}clrep:`;

let cluster: OwnRedisCluster;
const clients: RedisClient[] = [];
let frozenReplica: number | undefined;

async function clusterClient(): Promise<RedisClient> {
  const client = createRedisClient("decisions", {
    url: "redis://127.0.0.1",
    clusterNodes: cluster.nodes,
    // A slow answer on a busy machine is waited for; WAIT's own timeout is shorter.
    commandTimeoutMs: 5_000,
  });
  clients.push(client);
  await waitFor("the Cluster client to be ready", () =>
    client.status === "ready" ? true : undefined,
  );
  return client;
}

beforeAll(async () => {
  cluster = await startReplicatedCluster();
}, 120_000);

afterAll(async () => {
  if (frozenReplica !== undefined) cluster?.resumePort(frozenReplica);
  for (const client of clients) client.disconnect();
  await cluster?.stop();
});

const check = (bucket: string): EnforcerCheck => ({
  scope: "tier:pro",
  bucket,
  // One unit a day: nothing refills during the test.
  limit: { algorithm: "token-bucket", capacity: CAPACITY, refillPerSec: 1 / 86_400 },
  mode: "enforce",
  onStoreFailure: "closed",
  durability: "replicated",
});

describe('durability "replicated" on a Redis Cluster', () => {
  it("waits on the slot's own master: exact with acknowledgement, the failure policy when its replica is cut off", async () => {
    const store = new RedisStore({
      client: await clusterClient(),
      keyPrefix: prefix,
      maxBatchSize: 16,
      replicated: { client: await clusterClient(), waitMs: 1_000 },
    });
    // A subject on each master.
    const subjectOf = new Map<number, string>();
    for (let i = 0; subjectOf.size < 3 && i < 1_000; i++) {
      const subject = `c:rep-${i}`;
      const master = await cluster.masterPortOf(calculateSlot(store.subjectKey(subject)));
      if (!subjectOf.has(master)) subjectOf.set(master, subject);
    }
    expect(subjectOf.size).toBe(3);
    const masters = [...subjectOf.keys()];

    // 1. Exact, acknowledged, on every master.
    const hammered = await Promise.all(
      masters.map(async (master) => {
        const input: DecideInput = {
          subject: subjectOf.get(master) ?? "",
          checks: [check("exact")],
        };
        const results = await Promise.allSettled(
          Array.from({ length: 3 * CAPACITY }, () => store.decide(input)),
        );
        return {
          failed: results.filter((result) => result.status === "rejected").map(String),
          admitted: results.filter(
            (result) => result.status === "fulfilled" && result.value.allowed,
          ).length,
        };
      }),
    );
    expect(hammered).toEqual(masters.map(() => ({ failed: [], admitted: CAPACITY })));

    // 2. One master's replica frozen.
    const victim = masters[0] ?? 0;
    const [replica] = await cluster.replicaPortsOf(victim);
    expect(replica).toBeDefined();
    frozenReplica = replica ?? 0;
    cluster.pausePort(frozenReplica);
    const guard = new GuardedStore({
      store,
      failurePolicy: new FailurePolicy({ expectedGateways: 1 }),
      // WAIT's 1 s is waited for: the failure must come from NOREPLICAS, not from the guard.
      timeoutMs: 3_000,
      maxWaitMs: 5_000,
      isStoreReachable: () => true,
      newBreaker: () => new CircuitBreaker(),
    });
    const cutOff: EnforcerInput = {
      subject: subjectOf.get(victim) ?? "",
      checks: [check("cut-off")],
    };
    const bare = await Promise.allSettled([store.decide(cutOff), store.decide(cutOff)]);
    for (const result of bare) {
      expect(result.status).toBe("rejected");
      if (result.status === "rejected") {
        expect(result.reason).toBeInstanceOf(StoreUnavailableError);
        expect(String(result.reason)).toContain("NOREPLICAS");
      }
    }
    const guarded = await guard.decide(cutOff);
    expect({ allowed: guarded.allowed, degraded: guarded.degraded }).toEqual({
      allowed: false,
      degraded: true,
    });
    // The other masters' replicas acknowledge: their subjects are decided by Redis meanwhile.
    for (const master of masters.slice(1)) {
      const elsewhere = await guard.decide({
        subject: subjectOf.get(master) ?? "",
        checks: [check("cut-off")],
      });
      expect({ allowed: elsewhere.allowed, source: elsewhere.source }).toEqual({
        allowed: true,
        source: "store",
      });
    }

    // 3. The replica resumes: the subject is decided (and acknowledged) again, within capacity.
    cluster.resumePort(frozenReplica);
    frozenReplica = undefined;
    let admittedAfter = 0;
    let failedAfter = 0;
    await waitFor(
      "the resumed replica to acknowledge",
      async () => {
        try {
          if ((await store.decide(cutOff)).allowed) admittedAfter++;
          return true;
        } catch (error: unknown) {
          if (!(error instanceof StoreUnavailableError)) throw error;
          failedAfter++;
          return undefined;
        }
      },
      { timeoutMs: 60_000, intervalMs: 100 },
    );
    for (;;) {
      if (!(await store.decide(cutOff)).allowed) break;
      admittedAfter++;
    }
    // Each failed call's writes stayed on the master (it can only admit less): the three while
    // the replica was frozen and any while it caught up. Nothing was admitted twice or lost.
    expect(admittedAfter + bare.length + 1 + failedAfter).toBe(CAPACITY);
    console.log(
      `replicated on a Cluster: ${CAPACITY} of ${3 * CAPACITY} admitted per master; with the replica frozen, refused as degraded; after it resumed ${admittedAfter} more of capacity ${CAPACITY}`,
    );
  }, 120_000);
});
