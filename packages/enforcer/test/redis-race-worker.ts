/**
 * One of the separate OS processes of redis-store.race.test.ts. It connects, announces itself,
 * then for every round the test publishes fires its share of requests at once and reports how
 * many were admitted. Run as `node --import tsx test/redis-race-worker.ts`, with
 * REDIS_URL, RACE_PREFIX, RACE_CHANNEL, RACE_WORKER and optionally RACE_CLUSTER_NODES in the
 * environment.
 */

import { RedisStore } from "../src/limiter/stores/redis";
import { stepTokenBucket, type TokenBucketState } from "../src/limiter/token-bucket";
import type { LimitCheck, TokenBucketLimit } from "../src/limiter/types";
import { type RaceRound, raceChecks } from "./redis-race-rounds";
import { readyRedis } from "./support/redis";

const prefix = process.env.RACE_PREFIX ?? "";
const channel = process.env.RACE_CHANNEL ?? "";
const worker = process.env.RACE_WORKER ?? "";

// On a Redis Cluster when RACE_CLUSTER_NODES lists its nodes; the rounds still come over REDIS_URL.
const decisions = await readyRedis("decisions", undefined, process.env.RACE_CLUSTER_NODES ?? "");
const subscriber = await readyRedis("subscriber");
const publisher = await readyRedis("control");
const store = new RedisStore({ client: decisions, keyPrefix: prefix });
const batchingStore = new RedisStore({ client: decisions, keyPrefix: prefix, maxBatchSize: 64 });

/**
 * The deliberately wrong implementation the test must catch: read the state, wait for the reply,
 * decide with the pure core on this process's clock, write it back. Every request that reads
 * before another writes sees the same balance.
 */
async function decideNonAtomically(subject: string, limit: TokenBucketLimit): Promise<boolean> {
  const key = `${prefix}nonatomic:${subject}`;
  const stored = await decisions.get(key);
  const state = stored === null ? undefined : (JSON.parse(stored) as TokenBucketState);
  const step = stepTokenBucket(state, limit, Date.now(), 1);
  await decisions.set(key, JSON.stringify(step.state), "PX", 600_000);
  return step.decision.allowed;
}

async function fire(round: RaceRound): Promise<number> {
  const share = round.shares[Number(worker)] ?? 0;
  const checks: readonly LimitCheck[] = raceChecks(round);
  const request = async () => {
    if (round.variant === "non-atomic") {
      const [only] = checks;
      if (only?.limit.algorithm !== "token-bucket") throw new Error("non-atomic needs one bucket");
      return decideNonAtomically(round.subject, only.limit);
    }
    const decider = round.isBatched === true ? batchingStore : store;
    return (await decider.decide({ subject: round.subject, checks })).allowed;
  };
  if (round.isSequential === true) {
    let admitted = 0;
    for (let i = 0; i < share; i++) if (await request()) admitted++;
    return admitted;
  }
  const outcomes = await Promise.all(Array.from({ length: share }, request));
  return outcomes.filter(Boolean).length;
}

subscriber.on("message", (_channel: string, message: string) => {
  if (message === "stop") {
    decisions.disconnect();
    subscriber.disconnect();
    publisher.disconnect();
    return;
  }
  const round = JSON.parse(message) as RaceRound;
  fire(round).then(
    (admitted) =>
      publisher.publish(
        `${channel}:results`,
        JSON.stringify({ round: round.id, worker, admitted }),
      ),
    (error: unknown) =>
      publisher.publish(
        `${channel}:results`,
        JSON.stringify({ round: round.id, worker, error: String(error) }),
      ),
  );
});

await subscriber.subscribe(channel);
await publisher.publish(`${channel}:results`, JSON.stringify({ ready: worker }));
