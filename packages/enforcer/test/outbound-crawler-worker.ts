/**
 * One crawler process for outbound-crawler.test.ts: it shares the `outbound:crawl` budget (per
 * host) with the other workers through Redis, and fetches from the test's provider until every
 * host's queue of fetches, a counter in Redis, is used up. It prints `ready`, starts on `go` (a
 * line on stdin) so that every worker starts together, and prints one JSON line at the end: the
 * Redis time of every turn it was given, per host, and its successful fetches.
 *
 * Environment: REDIS_URL, KEY_PREFIX, PROVIDER_URL, HOSTS (comma-separated), FETCHES (per host),
 * WORKER (its name), RETRIES (attempts after a failed fetch), LANES (calls in flight per host).
 */
import { once } from "node:events";
import { Redis } from "ioredis";
import { createOutboundLimiter } from "../src/enforcer/outbound-limiter";
import { CRAWL_BUDGET } from "./support/outbound";

function env(name: string): string {
  const value = process.env[name];
  if (value === undefined || value === "") throw new Error(`${name} is required`);
  return value;
}

const redis = new Redis(env("REDIS_URL"), { maxRetriesPerRequest: 1 });
const keyPrefix = env("KEY_PREFIX");
const providerUrl = env("PROVIDER_URL");
const hosts = env("HOSTS").split(",");
const fetches = Number(env("FETCHES"));
const worker = env("WORKER");
const retries = Number(env("RETRIES"));
const lanes = Number(env("LANES"));

const limiter = createOutboundLimiter({ client: redis, keyPrefix, budgets: [CRAWL_BUDGET] });
const turns: Record<string, number[]> = {};
let succeeded = 0;

class ProviderFailed extends Error {}

async function crawlLane(host: string): Promise<void> {
  const hostTurns = turns[host] ?? [];
  turns[host] = hostTurns;
  for (;;) {
    const job = await redis.incr(`${keyPrefix}jobs:${host}`);
    if (job > fetches) return;
    let attempt = 0;
    await limiter.schedule(
      "outbound:crawl",
      host,
      async (permit) => {
        if (permit.turnAtMs !== null) hostTurns.push(permit.turnAtMs);
        attempt += 1;
        const response = await fetch(
          `${providerUrl}/fetch?host=${host}&job=${job}&attempt=${attempt}&worker=${worker}&turn=${permit.turnAtMs}`,
        );
        await response.arrayBuffer();
        if (!response.ok) throw new ProviderFailed(`HTTP ${response.status}`);
      },
      { retries, isRetryable: (error) => error instanceof ProviderFailed },
    );
    succeeded += 1;
  }
}

await redis.ping();
// Connections to the provider opened (and the code path compiled) before the start, so the first
// turns do not go late: the provider's bound assumes a call arrives within an interval of its turn.
await Promise.all(
  Array.from({ length: hosts.length * lanes }, async () => {
    const response = await fetch(`${providerUrl}/warmup`);
    await response.arrayBuffer();
  }),
);
process.stdout.write("ready\n");
process.stdin.setEncoding("utf8");
await once(process.stdin, "data");
process.stdin.destroy();
await Promise.all(hosts.flatMap((host) => Array.from({ length: lanes }, () => crawlLane(host))));
process.stdout.write(`${JSON.stringify({ worker, succeeded, turns })}\n`);
limiter.close();
await redis.quit();
