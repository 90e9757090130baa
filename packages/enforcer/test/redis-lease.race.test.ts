import { type ChildProcess, spawn } from "node:child_process";
import { createInterface, type Interface } from "node:readline";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { LEASE_RACE_CAPACITY, type LeaseReport, type LeaseRound } from "./redis-lease-rounds";

/*
 * Leases under races across processes: three OS processes, each a gateway's DecisionEngine on
 * its own Redis connection with leases on (20 ms lifetimes, so a round sees them granted, spent,
 * refilled, ended and given back), send 200 requests each for one customer (600 in all) from 8
 * concurrent loops, against a tier of 300 whose refill cannot interfere. Then, once every
 * worker has reported that its leases spent or gave back all they were granted, one worker drains
 * what is left in the bucket without leases. In every round:
 * - no more than 300 are admitted, however the leases were spread;
 * - admitted + drained = 300 exactly: every unit of the limit was admitted, by the round or by
 *   the drain, none lost in a lease that ended unspent and none counted twice;
 * - leases did admit requests (the rounds exercise them).
 */

const WORKERS = 3;
const SHARE = 200;
const LOOPS = 8;
const ROUNDS = 8;
const WORKER_PATH = fileURLToPath(new URL("./redis-lease-worker.ts", import.meta.url));
const ROOT = fileURLToPath(new URL("..", import.meta.url));

interface Worker {
  readonly process: ChildProcess;
  readonly lines: Interface;
  readonly next: () => Promise<string>;
}

function startWorker(prefix: string): Worker {
  const child = spawn(process.execPath, ["--import", "tsx", WORKER_PATH], {
    cwd: ROOT,
    env: { ...process.env, LEASE_PREFIX: prefix },
    stdio: ["pipe", "pipe", "inherit"],
  });
  const lines = createInterface({ input: child.stdout as NonNullable<typeof child.stdout> });
  const queue: string[] = [];
  const waiting: ((line: string) => void)[] = [];
  lines.on("line", (line) => {
    const waiter = waiting.shift();
    if (waiter === undefined) queue.push(line);
    else waiter(line);
  });
  const next = () => {
    const line = queue.shift();
    return line === undefined
      ? new Promise<string>((resolve) => waiting.push(resolve))
      : Promise.resolve(line);
  };
  return { process: child, lines, next };
}

describe("leases under races across processes", () => {
  const prefix = `${inject("redisKeyPrefix")}lease-race:`;
  const workers: Worker[] = [];

  beforeAll(async () => {
    for (let index = 0; index < WORKERS; index++) workers.push(startWorker(prefix));
    for (const worker of workers) expect(JSON.parse(await worker.next())).toEqual({ ready: true });
  });

  afterAll(async () => {
    for (const worker of workers) {
      worker.process.stdin?.end("stop\n");
      if (worker.process.exitCode === null) {
        await new Promise((resolve) => worker.process.once("exit", resolve));
      }
    }
  });

  it(`600 requests from 3 gateways on a tier of ${LEASE_RACE_CAPACITY}: never more admitted, every unit admitted once, in each of ${ROUNDS} rounds`, async () => {
    const rounds: { admitted: number; drained: number; fromLeases: number; returned: number }[] =
      [];
    for (let round = 0; round < ROUNDS; round++) {
      const customerId = `lease-race-${round}`;
      for (const worker of workers) {
        const message: LeaseRound = { customerId, share: SHARE, loops: LOOPS, drain: false };
        worker.process.stdin?.write(`${JSON.stringify(message)}\n`);
      }
      const reports = await Promise.all(
        workers.map(async (worker) => JSON.parse(await worker.next()) as LeaseReport),
      );
      // The drain starts only once every worker has settled its leases: a unit still out in
      // another gateway's lease is not in the bucket yet, and would be missed by an earlier drain.
      const drainer = workers[0] as Worker;
      const drain: LeaseRound = { customerId, share: 0, loops: 0, drain: true };
      drainer.process.stdin?.write(`${JSON.stringify(drain)}\n`);
      reports.push(JSON.parse(await drainer.next()) as LeaseReport);
      expect(reports.filter((report) => report.error !== undefined)).toEqual([]);
      const sum = (pick: (report: LeaseReport) => number) =>
        reports.reduce((total, report) => total + pick(report), 0);
      rounds.push({
        admitted: sum((report) => report.admitted),
        drained: sum((report) => report.drained),
        fromLeases: sum((report) => report.fromLeases),
        returned: sum((report) => report.returnedUnits),
      });
    }
    const summary = JSON.stringify(rounds);
    for (const round of rounds) {
      expect(round.admitted, summary).toBeLessThanOrEqual(LEASE_RACE_CAPACITY);
      expect(round.admitted + round.drained, summary).toBe(LEASE_RACE_CAPACITY);
    }
    expect(
      rounds.reduce((total, round) => total + round.fromLeases, 0),
      summary,
    ).toBeGreaterThan(0);
  });
});
