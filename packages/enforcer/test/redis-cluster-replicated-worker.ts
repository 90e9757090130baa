/**
 * One of the separate OS processes of redis-cluster-replicated-failover.test.ts: a gateway's
 * store on a Redis Cluster (a decisions client and a replicated client, as the enforcer makes
 * them), deciding one subject's two limits one call after another: the same token bucket once
 * with `durability: "replicated"` and once without. Each limit has a loop of its own, so a
 * replicated decision waiting for its WAIT never holds the other back.
 *
 * Run as `node --import tsx test/redis-cluster-replicated-worker.ts` with an IPC channel and
 * CLUSTER_NODES, KEY_PREFIX, SUBJECT and CAPACITY in the environment. It sends a tally of each
 * limit every 50 ms, and at once when told `mark`. `drain` makes it decide as fast as it can
 * (several at once) until both limits refuse; then it sends `drained` and exits.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { RedisStore } from "../src/limiter/stores/redis";
import { StoreUnavailableError } from "../src/limiter/stores/store-unavailable-error";
import type { LimitCheck } from "../src/limiter/types";
import { tokenBucket } from "../src/testing/policy-factory";
import { readyRedis } from "./support/redis";

export type DurabilityName = "replicated" | "default";

/** What one worker saw of one limit. */
export interface LimitTally {
  admitted: number;
  refused: number;
  /** Calls that failed with StoreUnavailableError: the failure policy's to decide. */
  unavailable: number;
  /** Anything else thrown: a bug. */
  otherErrors: string[];
  /** The last StoreUnavailableError's message, to show what the gap looked like. */
  lastUnavailable: string;
}

export type WorkerMessage =
  | { readonly kind: "tally"; readonly tallies: Record<DurabilityName, LimitTally> }
  /** The answer to `mark`: every decision it counts was answered before `mark` arrived. */
  | { readonly kind: "mark"; readonly tallies: Record<DurabilityName, LimitTally> }
  | { readonly kind: "drained"; readonly tallies: Record<DurabilityName, LimitTally> };

function env(name: string): string {
  const value = process.env[name];
  if (value === undefined || value === "") throw new Error(`${name} is required`);
  return value;
}

/** Between two decisions of one limit before the drain, in ms. */
const PACE_MS = 10;

const nodes = env("CLUSTER_NODES");
const subject = env("SUBJECT");
const capacity = Number(env("CAPACITY"));
// Long command timeouts: a busy machine's slow answer is waited for; a dead master fails at once.
const decisions = await readyRedis("decisions", undefined, nodes, 5_000);
const replicated = await readyRedis("decisions", undefined, nodes, 5_000);
const store = new RedisStore({
  client: decisions,
  keyPrefix: env("KEY_PREFIX"),
  replicated: { client: replicated, waitMs: 1_000 },
});

// One unit a day: nothing refills during the test, so every admission is one unit of `capacity`.
const limit = tokenBucket(capacity, 1 / 86_400);
const checksOf: Record<DurabilityName, readonly LimitCheck[]> = {
  replicated: [
    { scope: "tier:pro", bucket: "replicated", limit, mode: "enforce", durability: "replicated" },
  ],
  default: [{ scope: "tier:pro", bucket: "default", limit, mode: "enforce" }],
};
const newTally = (): LimitTally => ({
  admitted: 0,
  refused: 0,
  unavailable: 0,
  otherErrors: [],
  lastUnavailable: "",
});
const tallies: Record<DurabilityName, LimitTally> = {
  replicated: newTally(),
  default: newTally(),
};

let isDraining = false;

async function decideOnce(name: DurabilityName): Promise<void> {
  const tally = tallies[name];
  try {
    const decision = await store.decide({ subject, checks: checksOf[name] });
    if (decision.allowed) tally.admitted++;
    else tally.refused++;
  } catch (error: unknown) {
    if (error instanceof StoreUnavailableError) {
      tally.unavailable++;
      tally.lastUnavailable = error.message;
    } else {
      tally.otherErrors.push(String(error));
    }
  }
}

/**
 * Steady traffic (a decision every {@link PACE_MS}, so the limit lasts well past the failover),
 * then, once told to drain, four at once until the limit refuses (nothing refills: it is empty).
 */
async function loop(name: DurabilityName): Promise<void> {
  for (;;) {
    if (isDraining) {
      const refusedBefore = tallies[name].refused;
      await Promise.all(Array.from({ length: 4 }, () => decideOnce(name)));
      if (tallies[name].refused > refusedBefore) return;
    } else {
      await decideOnce(name);
      await sleep(PACE_MS);
    }
  }
}

const send = (message: WorkerMessage) => process.send?.(message);
const reporter = setInterval(() => send({ kind: "tally", tallies }), 50);
const loops = Promise.all([loop("replicated"), loop("default")]);

process.on("message", (message: unknown) => {
  if (message === "mark") send({ kind: "mark", tallies });
  if (message !== "drain") return;
  isDraining = true;
  void loops.then(() => {
    clearInterval(reporter);
    send({ kind: "drained", tallies });
    decisions.disconnect();
    replicated.disconnect();
    process.disconnect?.();
  });
});
