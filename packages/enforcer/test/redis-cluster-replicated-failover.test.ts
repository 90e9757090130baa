/**
 * `durability: "replicated"` through a Redis Cluster master failover: three masters with a
 * replica each, this file's own on free ports (`cluster-node-timeout` 3000, full coverage off, as
 * docs/failover.md recommends), and two worker processes (redis-cluster-replicated-worker.ts)
 * deciding one subject on one master under steady traffic: a token bucket with `durability:
 * "replicated"` and the same bucket without it. Nothing refills during the test.
 *
 * The failover is made to lose writes, as an asynchronous replica does: the victim's replica is
 * frozen (SIGSTOP) and its replication link cut (`CLIENT KILL TYPE replica` on the master), so
 * what the master decides from then on never reaches it. Once the workers have seen more default
 * admissions than they have decisions in flight, the master is killed with SIGKILL and the replica
 * thawed; it is promoted. The killed node is started again and rejoins as the new master's replica
 * (a replicated decision needs one to acknowledge it).
 *
 * Asserted, once both workers drained both limits after the failover:
 * - the replicated limit admitted at most its capacity over the whole run: every admission the
 *   old master made was acknowledged by the replica that took over, so none was lost;
 * - replicated decisions resumed on the promoted replica (the slot's master is now its port);
 * - the gap failed calls with StoreUnavailableError only (for the failure policy), never anything
 *   else;
 * - the default limit admitted more than its capacity: the writes after the cut were lost, so
 *   the scenario does lose what an unacknowledged limit admits (without this the first assertion
 *   would prove nothing).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import path from "node:path";
import calculateSlot from "cluster-key-slot";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { redisSubjectKey } from "../src/limiter/stores/redis-encoding";
import type { OwnRedisCluster } from "../src/testing/redis-server";
import { waitFor } from "../src/testing/wait-for";
import type { DurabilityName, LimitTally, WorkerMessage } from "./redis-cluster-replicated-worker";
import { appendFailoverReport } from "./support/failover-report";
import { startReplicatedCluster } from "./support/redis";

const WORKER_PATH = path.join(import.meta.dirname, "redis-cluster-replicated-worker.ts");
const WORKERS = 2;
/** Large enough that the steady traffic never empties it before the failover. */
const CAPACITY = 5_000;
const prefix = `${inject("redisKeyPrefix")}clrepfo:`;

type Tallies = Record<DurabilityName, LimitTally>;

interface Worker {
  readonly child: ChildProcess;
  tallies: Tallies | undefined;
  drained: Tallies | undefined;
  /** Called with the answer to `mark`. */
  onMark: ((tallies: Tallies) => void) | undefined;
}

let cluster: OwnRedisCluster;
const workers: Worker[] = [];
let frozenReplica: number | undefined;

beforeAll(async () => {
  cluster = await startReplicatedCluster();
}, 120_000);

afterAll(async () => {
  if (frozenReplica !== undefined) cluster?.resumePort(frozenReplica);
  for (const worker of workers) {
    if (worker.child.exitCode === null && worker.child.signalCode === null) {
      worker.child.kill("SIGKILL");
    }
  }
  await cluster?.stop();
});

function startWorker(subject: string): Worker {
  const child = spawn(process.execPath, ["--import", "tsx", WORKER_PATH], {
    env: {
      ...process.env,
      CLUSTER_NODES: cluster.nodesText,
      KEY_PREFIX: prefix,
      SUBJECT: subject,
      CAPACITY: String(CAPACITY),
    },
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  const worker: Worker = { child, tallies: undefined, drained: undefined, onMark: undefined };
  child.on("message", (message: WorkerMessage) => {
    worker.tallies = message.tallies;
    if (message.kind === "drained") worker.drained = message.tallies;
    if (message.kind === "mark") worker.onMark?.(message.tallies);
  });
  workers.push(worker);
  return worker;
}

/**
 * Each worker's tallies as of now: the answer to `mark`, sent after whatever the test did last,
 * counts every decision answered before it (a periodic report may be older than that).
 */
async function markTallies(): Promise<Tallies[]> {
  return Promise.all(
    workers.map(
      (worker) =>
        new Promise<Tallies>((resolve) => {
          worker.onMark = resolve;
          worker.child.send("mark");
        }),
    ),
  );
}

/** The tallies of `name` added up (by default the workers' latest reports). */
function total(
  name: DurabilityName,
  of: readonly (Tallies | undefined)[] = workers.map((worker) => worker.tallies),
): Omit<LimitTally, "lastUnavailable"> {
  const sum = { admitted: 0, refused: 0, unavailable: 0, otherErrors: [] as string[] };
  for (const tallies of of) {
    const tally = tallies?.[name];
    if (tally === undefined) continue;
    sum.admitted += tally.admitted;
    sum.refused += tally.refused;
    sum.unavailable += tally.unavailable;
    sum.otherErrors.push(...tally.otherErrors);
  }
  return sum;
}

/** Resolves once the workers' tallies satisfy `isDone`, as they report them. */
async function untilTallies(what: string, isDone: () => boolean): Promise<void> {
  try {
    // Long: two processes starting under tsx on a machine loaded far beyond its cores.
    await waitFor(what, () => (isDone() ? true : undefined), {
      timeoutMs: 120_000,
      intervalMs: 20,
    });
  } catch (error: unknown) {
    throw new Error(
      `${String(error)}; the workers saw: ${JSON.stringify(workers.map((worker) => worker.tallies))}`,
    );
  }
}

describe('durability "replicated" through a Redis Cluster master failover', () => {
  it("loses no admission of a replicated limit across the promotion, and decides on the new master", async () => {
    const subject = "c:replicated-failover";
    const slot = calculateSlot(redisSubjectKey(prefix, subject));
    const victim = await cluster.masterPortOf(slot);
    const [replica] = await cluster.replicaPortsOf(victim);
    if (replica === undefined) throw new Error(`the master on ${victim} has no replica`);

    for (let i = 0; i < WORKERS; i++) startWorker(subject);
    // Both limits admitted by Redis, replicated ones acknowledged, from every worker.
    await untilTallies("every worker to be admitted on both limits", () =>
      workers.every(
        (worker) =>
          (worker.tallies?.replicated.admitted ?? 0) > 0 &&
          (worker.tallies?.default.admitted ?? 0) > 0,
      ),
    );

    // The replica stops taking the stream: frozen, and its link cut so that what follows stays
    // on the master alone (a thawed replica would otherwise read it from its socket buffer).
    cluster.pausePort(replica);
    frozenReplica = replica;
    const master = new Redis({ host: "127.0.0.1", port: victim, maxRetriesPerRequest: 0 });
    master.on("error", () => {});
    expect(await master.call("CLIENT", "KILL", "TYPE", "replica")).toBe(1);
    master.disconnect();
    // More default admissions counted after the mark than decisions in flight (one per worker):
    // at least one was decided after the cut, and will be lost with the master.
    const defaultAtCut = total("default", await markTallies()).admitted;
    await untilTallies("default admissions after the cut", () => {
      return total("default").admitted > defaultAtCut + WORKERS;
    });
    const beforeKill = { replicated: total("replicated"), default: total("default") };
    // The steady traffic has not emptied either limit: whatever the failover loses, it is seen.
    expect([beforeKill.replicated.refused, beforeKill.default.refused]).toEqual([0, 0]);

    await cluster.killPort(victim);
    cluster.resumePort(replica);
    frozenReplica = undefined;
    await waitFor(
      "the replica to be promoted",
      async () => ((await cluster.masterPortOf(slot)) === replica ? true : undefined),
      { timeoutMs: 60_000, intervalMs: 100 },
    );
    // The promoted master has no replica yet, so its replicated decisions fail (NOREPLICAS)
    // until the old master rejoins as its replica.
    await cluster.restartPort(victim);
    const replicatedAtRestart = total("replicated", await markTallies()).admitted;
    await untilTallies(
      "replicated decisions admitted on the promoted master",
      () => total("replicated").admitted > replicatedAtRestart + WORKERS,
    );
    expect(await cluster.masterPortOf(slot)).toBe(replica);
    expect(await cluster.replicaPortsOf(replica)).toEqual([victim]);

    for (const worker of workers) worker.child.send("drain");
    await untilTallies("every worker to drain both limits", () =>
      workers.every((worker) => worker.drained !== undefined),
    );
    const replicated = total("replicated");
    const unacknowledged = total("default");
    const lastErrors = workers.map((worker) => worker.drained?.replicated.lastUnavailable);
    console.log(
      `replicated Cluster failover: capacity ${CAPACITY}; replicated limit ${replicated.admitted} admitted, ` +
        `${replicated.unavailable} calls failed (last: ${lastErrors.join(" | ")}); ` +
        `default limit ${unacknowledged.admitted} admitted (${unacknowledged.admitted - CAPACITY} over, lost with the master), ` +
        `${unacknowledged.unavailable} calls failed`,
    );
    await appendFailoverReport({
      kind: "cluster-replicated",
      capacity: CAPACITY,
      replicatedOvershoot: replicated.admitted - CAPACITY,
      defaultOvershoot: unacknowledged.admitted - CAPACITY,
      replicatedUnavailable: replicated.unavailable,
    });
    expect([...replicated.otherErrors, ...unacknowledged.otherErrors]).toEqual([]);
    // The gap was seen (and decided by the failure policy, not retried).
    expect(replicated.unavailable).toBeGreaterThan(0);
    // The guarantee: no admitted count lost across the promotion.
    expect(replicated.admitted).toBeLessThanOrEqual(CAPACITY);
    // Without WAIT the same run loses admissions: the scenario is one that loses writes.
    expect(unacknowledged.admitted).toBeGreaterThan(CAPACITY);
    await Promise.all(
      workers.map((worker) =>
        worker.child.exitCode === null ? once(worker.child, "exit") : Promise.resolve(),
      ),
    );
  }, 300_000);
});
