import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { RedisStore } from "../src/limiter/stores/redis";
import type { RedisClient } from "../src/publication/redis-clients";
import { type RaceRound, raceChecks } from "./redis-race-rounds";
import { readyRedis } from "./support/redis";

/*
 * Exactness when requests race across processes: three OS processes (redis-race-worker.ts) each
 * hold their own connections; for every round they receive one published message at once and
 * fire 9, 8 and 8 requests concurrently, 25 in all, on a bucket of 20 whose refill cannot
 * interfere. An atomic store admits exactly 20 in every round. The same harness running a
 * read-then-write implementation must over-admit at least once, or it could not catch a race.
 */

const WORKERS = 3;
const SHARES = [9, 8, 8];
const ROUNDS = 20;
const WORKER_PATH = fileURLToPath(new URL("./redis-race-worker.ts", import.meta.url));
const ROOT = fileURLToPath(new URL("..", import.meta.url));

interface WorkerReport {
  readonly ready?: string;
  readonly round?: number;
  readonly admitted?: number;
  readonly error?: string;
}

/**
 * The race suite. `clusterNodes` (read once the suite starts) puts the store on a Redis Cluster:
 * the workers' decisions go to it, while the rounds are still announced on the run's Redis.
 */
export function describeRacesAcrossProcesses(where: string, clusterNodes?: () => string): void {
  describe(`RedisStore under races across processes, ${where}`, () => {
    const prefix = `${inject("redisKeyPrefix")}race:`;
    const channel = `${prefix}rounds`;
    const workers: ChildProcess[] = [];
    let publisher: RedisClient;
    let subscriber: RedisClient;
    let decisions: RedisClient;
    const reports: WorkerReport[] = [];
    let onReport: (() => void) | undefined;
    let nextRoundId = 0;

    /** Resolves once `count` reports matching `isWanted` have arrived, and takes them. */
    async function takeReports(
      count: number,
      isWanted: (report: WorkerReport) => boolean,
    ): Promise<WorkerReport[]> {
      while (reports.filter(isWanted).length < count) {
        await new Promise<void>((resolve) => {
          onReport = resolve;
        });
      }
      const taken = reports.filter(isWanted);
      for (const report of taken) reports.splice(reports.indexOf(report), 1);
      return taken;
    }

    /** Publishes a round to every worker and returns how many requests were admitted in all. */
    async function runRound(round: Omit<RaceRound, "id" | "shares">): Promise<number> {
      const id = ++nextRoundId;
      const receivers = await publisher.publish(
        channel,
        JSON.stringify({ ...round, id, shares: SHARES }),
      );
      expect(receivers).toBe(WORKERS);
      const results = await takeReports(WORKERS, (report) => report.round === id);
      const errors = results.filter((report) => report.error !== undefined);
      expect(errors).toEqual([]);
      return results.reduce((sum, report) => sum + (report.admitted ?? 0), 0);
    }

    beforeAll(async () => {
      const nodes = clusterNodes?.() ?? "";
      publisher = await readyRedis("control");
      subscriber = await readyRedis("subscriber");
      decisions = await readyRedis("decisions", undefined, nodes);
      subscriber.on("message", (_channel: string, message: string) => {
        reports.push(JSON.parse(message) as WorkerReport);
        onReport?.();
      });
      await subscriber.subscribe(`${channel}:results`);
      for (let worker = 0; worker < WORKERS; worker++) {
        workers.push(
          spawn(process.execPath, ["--import", "tsx", WORKER_PATH], {
            cwd: ROOT,
            env: {
              ...process.env,
              RACE_PREFIX: prefix,
              RACE_CHANNEL: channel,
              RACE_WORKER: String(worker),
              RACE_CLUSTER_NODES: nodes,
            },
            stdio: ["ignore", "inherit", "inherit"],
          }),
        );
      }
      await takeReports(WORKERS, (report) => report.ready !== undefined);
    });

    afterAll(async () => {
      await publisher.publish(channel, "stop");
      await Promise.all(
        workers.map((worker) => (worker.exitCode === null ? once(worker, "exit") : undefined)),
      );
      publisher.disconnect();
      subscriber.disconnect();
      decisions.disconnect();
    });

    it(`25 requests from 3 processes on a bucket of 20 admit exactly 20, in each of ${ROUNDS} rounds`, async () => {
      const admitted: number[] = [];
      for (let round = 0; round < ROUNDS; round++) {
        admitted.push(await runRound({ variant: "atomic", subject: `c:atomic-${round}` }));
      }
      expect(admitted).toEqual(Array(ROUNDS).fill(20));
    });

    it(`with batching on, each process's share in one script call: still exactly 20, in each of ${ROUNDS} rounds`, async () => {
      const admitted: number[] = [];
      for (let round = 0; round < ROUNDS; round++) {
        admitted.push(
          await runRound({ variant: "atomic", subject: `c:batched-${round}`, isBatched: true }),
        );
      }
      expect(admitted).toEqual(Array(ROUNDS).fill(20));
    });

    it(`a layered decision (ceiling and tier) admits exactly 20 and consumes nothing on rejection, in each of ${ROUNDS} rounds`, async () => {
      const store = new RedisStore({ client: decisions, keyPrefix: prefix });
      const admitted: number[] = [];
      const otherLayerLeft: number[] = [];
      for (let round = 0; round < ROUNDS; round++) {
        const layered = {
          variant: "layered",
          subject: `c:layered-${round}`,
          binding: round % 2 === 0 ? "tier" : "ceiling",
        } as const;
        admitted.push(await runRound(layered));
        // The layer that did not bind (size 30) paid for the 20 admissions only.
        const after = await store.peek({
          subject: layered.subject,
          checks: raceChecks({ ...layered, id: 0, shares: SHARES }),
          cost: 0,
        });
        otherLayerLeft.push(Math.max(...after.outcomes.map((outcome) => outcome.remaining)));
      }
      expect(admitted).toEqual(Array(ROUNDS).fill(20));
      expect(otherLayerLeft).toEqual(Array(ROUNDS).fill(10));
    });

    it("the same harness catches a read-then-write implementation: it over-admits", async () => {
      const concurrent: number[] = [];
      const sequential: number[] = [];
      for (let round = 0; round < ROUNDS; round++) {
        concurrent.push(await runRound({ variant: "non-atomic", subject: `c:nonatomic-${round}` }));
        sequential.push(
          await runRound({
            variant: "non-atomic",
            subject: `c:nonatomic-sequential-${round}`,
            isSequential: true,
          }),
        );
      }
      expect(concurrent.filter((count) => count > 20).length, concurrent.join(" ")).toBeGreaterThan(
        0,
      );
      // One request at a time per process: over-admission here needs the processes to overlap.
      expect(sequential.filter((count) => count > 20).length, sequential.join(" ")).toBeGreaterThan(
        0,
      );
    });
  });
}
