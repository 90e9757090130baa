/**
 * Lease fairness across gateways: N gateway processes (`lease-fairness-worker.ts`, each a
 * DecisionEngine on its own RedisStore, batching and the local stage on, as a gateway runs them)
 * send one customer's requests at steady rates, split unevenly between them, against one limit,
 * with leases on or off. What a round admits is compared with what the limit allows:
 *
 * - a token bucket allows its capacity plus its refill over the span the round took, measured on
 *   Redis's clock from the first decision's `TIME`: up to when the last request was sent, capped
 *   at what was offered, is the ideal; up to a `TIME` read once every decision was answered is
 *   the most it may admit (a busy machine answers late, and the refill meanwhile is not the
 *   traffic's to have asked for). Redis's `TIME` and the workers' `Date.now()` read one clock:
 *   the gateways run on Redis's machine;
 * - any other limit allows what the pure limiter core admits when every request the workers
 *   sent is replayed through it, in order, at the instant it was sent (the machine's clock,
 *   which Redis's `TIME` reads too): what one gateway deciding every request alone, exactly and
 *   at once, would admit. Requests reach Redis a little after they are sent, so this is the
 *   ideal within a request or two at a window's edge.
 *
 * The package's fairness test and `npm run bench -- lease-fairness` both drive it.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { type LimitState, stepLimit } from "../limiter/step-limit";
import type { LimitSpec } from "../limiter/types";

/** One round, as the controller tells each worker. */
export interface FairnessOrder {
  readonly customerId: string;
  readonly limit: LimitSpec;
  readonly leases: boolean;
  /** This worker's requests a second (0: it sends none). */
  readonly ratePerSec: number;
  readonly durationMs: number;
  /** The wall-clock instant every worker starts at (the machine's one clock). */
  readonly startAtMs: number;
  /**
   * Report at once, with the units its leases still hold, and then keep them (neither spend nor
   * give them back), to be killed holding them.
   */
  readonly hold?: boolean;
}

/** One worker's account of a round. */
export interface FairnessReport {
  readonly offered: number;
  readonly admitted: number;
  readonly fromLeases: number;
  /** Redis time of this worker's first decision (all go to Redis: nothing is leased yet). */
  readonly firstStoreMs: number | null;
  /** Redis `TIME` read once every one of this worker's decisions was answered. */
  readonly endStoreMs: number;
  /** When this worker sent its last request (the machine's clock, which Redis reads too). */
  readonly lastSentAtMs: number | null;
  readonly grantedUnits: number;
  readonly returnedUnits: number;
  readonly expiredUnits: number;
  /** Units its leases hold (a `hold` order's report; 0 otherwise, as they were settled). */
  readonly heldUnits: number;
  /** The wall-clock instant each request was sent at, in order. */
  readonly sentAtMs: readonly number[];
  readonly error?: string;
}

/** A round of the grid: how the customer's traffic is split and how fast it comes. */
export interface FairnessRound {
  readonly limit: LimitSpec;
  /** Shares of the traffic per gateway, summing to 1 (for example [0.9, 0.05, 0.05]). */
  readonly split: readonly number[];
  /** Offered rate as a multiple of the limit's sustained rate (refill, or limit per window). */
  readonly rateMultiple: number;
  readonly durationMs: number;
  readonly leases: boolean;
  /** Every gateway reports at once and keeps what its leases hold, to be killed (`stop`). */
  readonly hold?: boolean;
}

export interface FairnessOutcome {
  /** The round's customer (fresh for every round). */
  readonly customerId: string;
  readonly offered: number;
  readonly admitted: number;
  /** What the limit allows while the requests were sent, capped at what was offered. */
  readonly ideal: number;
  /**
   * What the limit allows, uncapped: for a token bucket, admitting more is a bug; for the
   * others it is the replay's count (see {@link allowedFor}), within a request or two.
   */
  readonly allowed: number;
  readonly spanMs: number;
  readonly fromLeases: number;
  readonly returnedUnits: number;
  readonly expiredUnits: number;
  /** Units the gateways' leases still hold (a `hold` round; 0 otherwise). */
  readonly heldUnits: number;
  readonly perGateway: readonly {
    readonly offered: number;
    readonly admitted: number;
    readonly fromLeases: number;
  }[];
}

/** The sustained rate a limit allows, per second. */
export function sustainedPerSec(limit: LimitSpec): number {
  switch (limit.algorithm) {
    case "token-bucket":
      return limit.refillPerSec;
    case "fixed-window":
    case "sliding-window":
    case "sliding-log":
      return (limit.limit * 1_000) / limit.windowMs;
    case "leaky-meter":
      return limit.drainPerSec;
    default: {
      const unknown: never = limit;
      throw new TypeError(`unknown limit ${JSON.stringify(unknown)}`);
    }
  }
}

/**
 * What `limit` allows a fresh subject for requests sent at `sentAtMs` over `spanMs` of Redis's
 * clock (see the module comment): for a token bucket its capacity plus its refill over the span,
 * for any other limit what the pure core admits of those requests replayed in order.
 */
export function allowedFor(limit: LimitSpec, sentAtMs: readonly number[], spanMs: number): number {
  if (limit.algorithm === "token-bucket") {
    return limit.capacity + (limit.refillPerSec * spanMs) / 1_000;
  }
  let state: LimitState | undefined;
  let admitted = 0;
  for (const atMs of [...sentAtMs].sort((a, b) => a - b)) {
    const step = stepLimit(state, limit, atMs, 1);
    if (step.decision.allowed) {
      admitted++;
      state = step.state;
    }
  }
  return admitted;
}

/** The longest a round waits for its window to begin (see `FairnessGateways.run`). */
const MAX_ALIGN_WAIT_MS = 10_000;

/** How late after a round's end its last decisions may still reach Redis on a busy machine. */
const ROUND_END_MARGIN_MS = 2_000;

interface Worker {
  readonly child: ChildProcess;
  readonly next: () => Promise<string>;
}

const WORKER_PATH = fileURLToPath(new URL("./lease-fairness-worker.ts", import.meta.url));

function startWorker(redisUrl: string, keyPrefix: string): Worker {
  const child = spawn(process.execPath, ["--import", "tsx", WORKER_PATH], {
    env: { ...process.env, FAIRNESS_REDIS_URL: redisUrl, FAIRNESS_PREFIX: keyPrefix },
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
  child.once("exit", (code) => {
    for (const waiter of waiting.splice(0)) {
      waiter(JSON.stringify({ error: `the worker exited (code ${String(code)})` }));
    }
  });
  const next = () => {
    const line = queue.shift();
    return line === undefined
      ? new Promise<string>((resolve) => waiting.push(resolve))
      : Promise.resolve(line);
  };
  return { child, next };
}

/** N gateway processes on one Redis, ready for rounds; `stop()` ends them. */
export class FairnessGateways {
  readonly #workers: Worker[];
  #rounds = 0;
  readonly #runId = `${process.pid}-${Date.now().toString(36)}`;

  private constructor(workers: Worker[]) {
    this.#workers = workers;
  }

  static async start(
    count: number,
    redisUrl: string,
    keyPrefix: string,
  ): Promise<FairnessGateways> {
    const workers = Array.from({ length: count }, () => startWorker(redisUrl, keyPrefix));
    for (const worker of workers) {
      const ready = JSON.parse(await worker.next()) as { ready?: boolean; error?: string };
      if (ready.ready !== true) {
        for (const other of workers) other.child.kill();
        throw new Error(`a fairness gateway did not start: ${ready.error ?? "no answer"}`);
      }
    }
    return new FairnessGateways(workers);
  }

  get count(): number {
    return this.#workers.length;
  }

  /** One round on a fresh customer; rejects if a worker failed. */
  async run(round: FairnessRound): Promise<FairnessOutcome> {
    if (round.split.length !== this.#workers.length) {
      throw new RangeError(`split has ${round.split.length} shares for ${this.count} gateways`);
    }
    const customerId = `fair-${this.#runId}-${++this.#rounds}`;
    const totalPerSec = round.rateMultiple * sustainedPerSec(round.limit);
    // Every worker starts at the same instant, far enough ahead for the orders to arrive. A
    // round shorter than its window runs inside one window (where a boundary falls would
    // otherwise decide what the limit allows, and the rounds compared would not share it): a
    // short window's round starts just after one of its windows begins; a long window's round
    // starts at once unless its window would end before the round (and a late answer's margin),
    // and then just after the next window begins, a wait of at most the round's own length.
    let startAtMs = Date.now() + 300;
    const limit = round.limit;
    if (limit.algorithm === "fixed-window" || limit.algorithm === "sliding-window") {
      const untilNextWindowMs = limit.windowMs - (startAtMs % limit.windowMs);
      const fits = untilNextWindowMs > round.durationMs + ROUND_END_MARGIN_MS;
      if (
        round.durationMs + 200 <= limit.windowMs &&
        (limit.windowMs <= MAX_ALIGN_WAIT_MS || !fits)
      ) {
        startAtMs += untilNextWindowMs + 100;
      }
    }
    this.#workers.forEach((worker, index) => {
      const order: FairnessOrder = {
        customerId,
        limit: round.limit,
        leases: round.leases,
        ratePerSec: totalPerSec * (round.split[index] ?? 0),
        durationMs: round.durationMs,
        startAtMs,
        hold: round.hold === true,
      };
      worker.child.stdin?.write(`${JSON.stringify(order)}\n`);
    });
    const reports = await Promise.all(
      this.#workers.map(async (worker) => JSON.parse(await worker.next()) as FairnessReport),
    );
    const failed = reports.find((report) => report.error !== undefined);
    if (failed !== undefined) throw new Error(`a fairness gateway failed: ${failed.error}`);
    const firsts = reports
      .map((report) => report.firstStoreMs)
      .filter((first): first is number => first !== null);
    const startMs = Math.min(...firsts);
    const endMs = Math.max(...reports.map((report) => report.endStoreMs));
    const spanMs = Math.max(0, endMs - startMs);
    const lastSents = reports
      .map((report) => report.lastSentAtMs)
      .filter((sent): sent is number => sent !== null);
    const sentSpanMs = Math.max(0, Math.min(endMs, Math.max(...lastSents)) - startMs);
    const sum = (pick: (report: FairnessReport) => number) =>
      reports.reduce((total, report) => total + pick(report), 0);
    const offered = sum((report) => report.offered);
    const sentAtMs = reports.flatMap((report) => report.sentAtMs);
    const allowed = allowedFor(round.limit, sentAtMs, spanMs);
    const allowedWhileSent = allowedFor(round.limit, sentAtMs, sentSpanMs);
    return {
      customerId,
      offered,
      admitted: sum((report) => report.admitted),
      ideal: Math.min(offered, Math.floor(allowedWhileSent)),
      allowed,
      spanMs,
      fromLeases: sum((report) => report.fromLeases),
      returnedUnits: sum((report) => report.returnedUnits),
      expiredUnits: sum((report) => report.expiredUnits),
      heldUnits: sum((report) => report.heldUnits),
      perGateway: reports.map((report) => ({
        offered: report.offered,
        admitted: report.admitted,
        fromLeases: report.fromLeases,
      })),
    };
  }

  /**
   * Stops every worker: cleanly (they give their leases back), or with SIGKILL.
   */
  async stop(signal: "clean" | "SIGKILL" = "clean"): Promise<void> {
    await Promise.all(
      this.#workers.map(async (worker) => {
        if (worker.child.exitCode !== null) return;
        const exited = new Promise((resolve) => worker.child.once("exit", resolve));
        if (signal === "SIGKILL") worker.child.kill("SIGKILL");
        else worker.child.stdin?.end("stop\n");
        await exited;
      }),
    );
  }
}
