/**
 * Redis Cluster as a deployment: a real Cluster of three masters started by this file on free
 * ports (`redis-server --cluster-enabled yes`, joined by `redis-cli --cluster create`), never the
 * shared Redis. The store's contract suite and the race across three processes run against it
 * unchanged, with batching on; then publication, one enforcer end to end (its decisions,
 * heartbeat, metrics and rejections), and a master that stops.
 */
import { once } from "node:events";
import calculateSlot from "cluster-key-slot";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createEnforcer } from "../src/enforcer/enforcer";
import type { EnforcerLogger } from "../src/enforcer/logger";
import { RedisStore } from "../src/limiter/stores/redis";
import { REDIS_DECIDE_LIBRARY_NAME } from "../src/limiter/stores/redis-decide-script";
import { StoreUnavailableError } from "../src/limiter/stores/store-unavailable-error";
import type { LimitCheck } from "../src/limiter/types";
import { canonicalJson } from "../src/policy/canonical";
import { EntrySetSum, entriesOfSnapshotPolicy, entryDigestHex } from "../src/policy/entries";
import { PolicyState } from "../src/policy/policy-state";
import type { TSnapshot } from "../src/policy/schemas";
import { readEnforcerHeartbeats, readRecentRejections } from "../src/publication/enforcer-reports";
import { policyRedisNames } from "../src/publication/keys";
import { readDecisionMinute, readScopeMinute } from "../src/publication/metrics-reader";
import { publishPolicyDelta, publishPolicySnapshot } from "../src/publication/publish-policy";
import {
  parsePolicyAnnouncement,
  readPolicyDeltas,
  readPolicyHead,
} from "../src/publication/read-policy";
import { createRedisClient, type RedisClient } from "../src/publication/redis-clients";
import { runLimiterStoreContract } from "../src/testing/limiter-store-contract";
import { exampleSnapshot, tokenBucket } from "../src/testing/policy-factory";
import { OwnRedisCluster } from "../src/testing/redis-server";
import { waitFor } from "../src/testing/wait-for";
import { describeRacesAcrossProcesses } from "./redis-race-suite";

let cluster: OwnRedisCluster;
const prefix = `${inject("redisKeyPrefix")}cl:`;
const silent: EnforcerLogger = { log() {} };
/** The URL carries only how to talk to the nodes (no TLS, no password here). */
const URL_FOR_NODES = "redis://127.0.0.1";

/** Publishes `snapshot` whole, in the delta protocol's format; returns its entry set's checksum. */
async function publishWhole(
  redis: RedisClient,
  prefix: string,
  snapshot: TSnapshot,
): Promise<string> {
  const state = PolicyState.fromSnapshot(snapshot);
  const published = await publishPolicySnapshot(redis, prefix, {
    version: snapshot.version,
    checksum: state.checksum,
    entries: state.size.entries,
    mode: "publish",
    bytes: state.toBinary(),
  });
  expect(published.status).toBe("applied");
  return state.checksum;
}

async function clusterClient(role: "decisions" | "control" | "subscriber"): Promise<RedisClient> {
  // A long command timeout: on a busy machine a slow answer is waited for, not failed (the
  // failure tests stop nodes, which fails commands at once).
  const client = createRedisClient(role, {
    url: URL_FOR_NODES,
    clusterNodes: cluster.nodes,
    commandTimeoutMs: 10_000,
  });
  if (client.status !== "ready") await once(client, "ready");
  return client;
}

beforeAll(async () => {
  cluster = await OwnRedisCluster.start(3);
}, 90_000);

afterAll(async () => {
  await cluster?.stop();
});

for (const maxBatchSize of [1, 64]) {
  runLimiterStoreContract(
    `RedisStore on a 3-master Redis Cluster, up to ${maxBatchSize} decisions per call`,
    async (clock) => {
      const client = await clusterClient("decisions");
      const store = new RedisStore({
        client,
        keyPrefix: `${prefix}c${maxBatchSize}:`,
        clock,
        maxBatchSize,
      });
      return {
        decide: (input) => store.decide(input),
        peek: (input) => store.peek(input),
        close: async () => {
          client.disconnect();
        },
      };
    },
  );
}

describeRacesAcrossProcesses("on a 3-master Redis Cluster", () => cluster.nodesText);

describe("Redis Cluster, end to end", () => {
  let control: RedisClient;
  let decisions: RedisClient;

  beforeAll(async () => {
    control = await clusterClient("control");
    decisions = await clusterClient("decisions");
  });

  afterAll(() => {
    control.disconnect();
    decisions.disconnect();
  });

  it("a batch of decisions for subjects on every master, in one event-loop turn: no CROSSSLOT, exact counts, keys on all three masters", async () => {
    const store = new RedisStore({
      client: decisions,
      keyPrefix: `${prefix}spread:`,
      maxBatchSize: 64,
    });
    const checks: LimitCheck[] = [
      { scope: "tier:pro", bucket: "account", limit: tokenBucket(2, 0.001), mode: "enforce" },
      { scope: "ceiling", bucket: "ceiling", limit: tokenBucket(1000, 0.001), mode: "enforce" },
    ];
    // 120 subjects, 3 requests each, all at once: 2 admitted per subject.
    const outcomes = await Promise.all(
      Array.from({ length: 360 }, (_, i) =>
        store.decide({ subject: `c:spread-${i % 120}`, checks }),
      ),
    );
    expect(outcomes.filter((decision) => decision.allowed)).toHaveLength(240);
    const perMaster = await Promise.all(
      cluster.nodes.map(async (node) => {
        const direct = createRedisClient("control", { url: `redis://${node.host}:${node.port}` });
        try {
          const [, keys] = await direct.scan("0", "MATCH", `${prefix}spread:*`, "COUNT", 10_000);
          const listed = await direct.call(
            "FUNCTION",
            "LIST",
            "LIBRARYNAME",
            REDIS_DECIDE_LIBRARY_NAME,
          );
          return { keys: keys.length, hasLibrary: Array.isArray(listed) && listed.length > 0 };
        } finally {
          direct.disconnect();
        }
      }),
    );
    // Decided with FCALL: the store loaded its library on every master.
    expect(store.scriptForm).toBe("function");
    expect(perMaster.map((master) => master.hasLibrary)).toEqual(cluster.nodes.map(() => true));
    expect(
      perMaster.every((master) => master.keys > 0),
      perMaster.map((master) => master.keys).join(" "),
    ).toBe(true);
    // One key per subject: its hash, holding both buckets.
    expect(perMaster.reduce((sum, master) => sum + master.keys, 0)).toBe(120);
  });

  it("lease calls held back for subjects on every master leave per slot, each to its master, and charge exactly", async () => {
    const store = new RedisStore({
      client: decisions,
      keyPrefix: `${prefix}held:`,
      maxBatchSize: 64,
    });
    const checks: LimitCheck[] = [
      { scope: "tier:pro", bucket: "account", limit: tokenBucket(100, 0.001), mode: "enforce" },
    ];
    const subjects = Array.from({ length: 30 }, (_, i) => `c:held-${i}`);
    // Held for up to 50 ms, then sent by the store's own timer: one call per slot.
    const answers = await Promise.all(
      subjects.map((subject) =>
        store.decideLeasing(
          { subject, checks, cost: 0 },
          { units: 10, lifeMs: 1_000, maxDelayMs: 50 },
        ),
      ),
    );
    expect(answers.map((answer) => answer.units)).toEqual(subjects.map(() => 10));
    // The ten leased units are gone from every subject's bucket, wherever it lives.
    const after = await Promise.all(subjects.map((subject) => store.decide({ subject, checks })));
    expect(after.map((decision) => decision.remaining)).toEqual(subjects.map(() => 89));
    const slots = new Set(subjects.map((subject) => calculateSlot(store.subjectKey(subject))));
    expect(slots.size).toBeGreaterThan(cluster.nodes.length);
  });

  it("the delta protocol works through a Cluster client: a whole snapshot, then a delta, the head, the log and their announcements", async () => {
    const subscriber = await clusterClient("subscriber");
    const deltaPrefix = `${prefix}delta:`;
    const heard: string[] = [];
    subscriber.on("message", (_channel: string, message: string) => heard.push(message));
    await subscriber.subscribe(policyRedisNames(deltaPrefix).announce);
    try {
      const snapshot = exampleSnapshot(() => {}, { version: 1 });
      const checksum = await publishWhole(control, deltaPrefix, snapshot);
      // Version 2 adds an override for one customer: one entry.
      const value = {
        customerId: "zeta",
        endpointClass: null,
        limit: {
          algorithm: "token-bucket",
          capacity: 50,
          refillPerSec: 5,
          mode: "enforce",
          onStoreFailure: "open",
        },
      };
      const next = new EntrySetSum(checksum).add(
        entryDigestHex("customer:zeta", canonicalJson(value)),
      ).hex;
      const deltaJson = JSON.stringify({
        format: 1,
        version: 2,
        base: 1,
        compiledAt: new Date().toISOString(),
        baseChecksum: checksum,
        checksum: next,
        changes: [{ key: "customer:zeta", value }],
      });
      const entries = entriesOfSnapshotPolicy(snapshot.policy).length + 1;
      expect(
        await publishPolicyDelta(control, deltaPrefix, {
          version: 2,
          checksum: next,
          baseChecksum: checksum,
          entries,
          deltaJson,
        }),
      ).toMatchObject({ status: "applied", version: 2 });
      // The same delta again changes nothing: newer only, on the Cluster too.
      expect(
        await publishPolicyDelta(control, deltaPrefix, {
          version: 2,
          checksum: next,
          baseChecksum: checksum,
          entries,
          deltaJson,
        }),
      ).toMatchObject({ status: "duplicate" });
      expect(await readPolicyHead(control, deltaPrefix)).toMatchObject({
        status: "ok",
        head: { version: 2, checksum: next, snapshotVersion: 1 },
      });
      expect(await readPolicyDeltas(control, deltaPrefix, 2, 2)).toEqual([deltaJson]);
      const versions = await waitFor("both announcements", () => {
        const parsed = heard.map(parsePolicyAnnouncement).map((message) => message?.version);
        return parsed.includes(1) && parsed.includes(2) ? parsed : undefined;
      });
      expect(versions).toEqual([1, 2]);
    } finally {
      subscriber.disconnect();
    }
  });

  it("one enforcer on the Cluster decides 25 simultaneous requests on a bucket of 20 exactly, and its heartbeat, metrics and rejections can be read back", async () => {
    const enforcerPrefix = `${prefix}enf:`;
    const snapshot = exampleSnapshot(
      (input) => {
        input.tiers.push({ name: "still", displayName: "Still", limit: tokenBucket(20, 0.001) });
      },
      { version: 1 },
    );
    await publishWhole(control, enforcerPrefix, snapshot);
    const enforcer = await createEnforcer({
      redis: { url: URL_FOR_NODES, clusterNodes: cluster.nodes, keyPrefix: enforcerPrefix },
      expectedGateways: 1,
      enforcerId: "cluster-enforcer",
      reporting: { heartbeatIntervalMs: 100, metricsFlushIntervalMs: 100 },
      logger: silent,
    });
    try {
      expect(enforcer.status().policy?.version).toBe(1);
      const results = await Promise.all(
        Array.from({ length: 25 }, () =>
          enforcer.check({
            customerId: "globex",
            tier: "still",
            method: "GET",
            path: "/v1/things",
          }),
        ),
      );
      expect(results.filter((result) => result.decision.allowed)).toHaveLength(20);
      expect(results.every((result) => !result.decision.degraded)).toBe(true);
      expect(enforcer.status().decisionsWithoutStore).toEqual({
        timeout: 0,
        "store-error": 0,
        "circuit-open": 0,
      });

      const heartbeat = await waitFor("the heartbeat", async () => {
        const { heartbeats } = await readEnforcerHeartbeats(control, enforcerPrefix, 10);
        return heartbeats.find((beat) => beat.id === "cluster-enforcer" && beat.version === 1);
      });
      expect(heartbeat.decisionsWithoutStore).toEqual({
        storeError: 0,
        timeout: 0,
        circuitOpen: 0,
      });

      const epochMinute = Math.floor(Date.now() / 60_000);
      const counted = await waitFor("the flushed counts", async () => {
        const minutes = await Promise.all(
          [epochMinute - 1, epochMinute].map((minute) =>
            readScopeMinute(control, enforcerPrefix, minute),
          ),
        );
        const tier = minutes.flat().filter((row) => row.scope === "tier:still");
        const rejected = tier.reduce((sum, row) => sum + row.rejected, 0);
        const allowed = tier.reduce((sum, row) => sum + row.allowed, 0);
        return allowed + rejected === 25 ? { allowed, rejected } : undefined;
      });
      expect(counted).toEqual({ allowed: 20, rejected: 5 });
      const decisionsCounted = await Promise.all(
        [epochMinute - 1, epochMinute].map((minute) =>
          readDecisionMinute(control, enforcerPrefix, minute),
        ),
      );
      expect(decisionsCounted.reduce((sum, minute) => sum + minute.decisions, 0)).toBe(25);
      // The 5 rejections, counted in entries of one limit (within a second of each other).
      const rejections = await waitFor("the recent rejections", async () => {
        const listed = await readRecentRejections(control, enforcerPrefix, "globex", 50);
        return listed.reduce((sum, entry) => sum + entry.count, 0) === 5 ? listed : undefined;
      });
      expect(rejections.every((rejection) => rejection.scope === "tier:still")).toBe(true);
    } finally {
      await enforcer.stop();
    }
    // A clean stop removes the heartbeat, on the Cluster too.
    const { heartbeats } = await readEnforcerHeartbeats(control, enforcerPrefix, 10);
    expect(heartbeats.map((beat) => beat.id)).not.toContain("cluster-enforcer");
  });

  // Last: it takes a master away for good.
  it("a stopped master fails the decisions it served with StoreUnavailableError, never a raw Cluster reply", async () => {
    const store = new RedisStore({
      client: decisions,
      keyPrefix: `${prefix}down:`,
      maxBatchSize: 64,
    });
    const checks: LimitCheck[] = [
      { scope: "tier:pro", bucket: "account", limit: tokenBucket(100, 1), mode: "enforce" },
    ];
    await cluster.stopNode(0);
    const errors: unknown[] = [];
    await waitFor("decisions on the stopped master to fail", async () => {
      const settled = await Promise.allSettled(
        Array.from({ length: 60 }, (_, i) => store.decide({ subject: `c:down-${i}`, checks })),
      );
      const failed = settled.filter((result) => result.status === "rejected");
      errors.push(...failed.map((result) => (result.status === "rejected" ? result.reason : null)));
      return failed.length > 0 ? true : undefined;
    });
    expect(errors.length).toBeGreaterThan(0);
    for (const error of errors) {
      expect(error, String(error)).toBeInstanceOf(StoreUnavailableError);
    }
  });
});
