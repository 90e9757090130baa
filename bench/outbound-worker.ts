/**
 * One crawler process of the `outbound` bench (bench/outbound.ts), for one implementation (IMPL):
 * `limitplane` (createOutboundLimiter), `bottleneck` (Bottleneck 2.19.5, Redis clustering through
 * ioredis, minTime 100 ms per host) or `rlf-queue` (rate-limiter-flexible's RateLimiterQueue over
 * RateLimiterRedis, 10 points per 1 s per host). Fetches are claimed from a counter per host in a
 * second Redis (JOBS_REDIS_URL), so the limiter's Redis counts only the limiter's commands. Prints
 * `ready`, starts on a line on stdin, prints its completed calls as JSON at the end.
 */
import { once } from "node:events";
import { createOutboundLimiter } from "@limitplane/enforcer/callers";
import Bottleneck from "bottleneck";
import { Redis } from "ioredis";
import { RateLimiterQueue, RateLimiterRedis } from "rate-limiter-flexible";

function env(name: string): string {
  const value = process.env[name];
  if (value === undefined || value === "") throw new Error(`${name} is required`);
  return value;
}

const impl = env("IMPL");
const limitUrl = new URL(env("LIMIT_REDIS_URL"));
const prefix = env("PREFIX");
const provider = env("PROVIDER_URL");
const hosts = env("HOSTS").split(",");
const fetches = Number(env("FETCHES"));
const lanes = Number(env("LANES"));
const jobs = new Redis(env("JOBS_REDIS_URL"));
const limitRedis = new Redis(env("LIMIT_REDIS_URL"));

type Gate = (host: string) => Promise<void>;

function makeGate(): { gate: Gate; close: () => Promise<void> } {
  if (impl === "limitplane") {
    const limiter = createOutboundLimiter({
      client: limitRedis,
      keyPrefix: prefix,
      budgets: [
        {
          name: "crawl",
          limit: { algorithm: "token-bucket", capacity: 1, refillPerSec: 10 },
          maxWaitMs: 600_000,
          keyBy: "host",
        },
      ],
    });
    return {
      gate: async (host) => {
        await limiter.acquire("outbound:crawl", { key: host });
      },
      close: async () => limiter.close(),
    };
  }
  if (impl === "bottleneck") {
    const connection = new Bottleneck.IORedisConnection({
      clientOptions: { host: limitUrl.hostname, port: Number(limitUrl.port) },
    });
    const byHost = new Map(
      hosts.map((host) => [
        host,
        new Bottleneck({
          id: `${prefix}crawl-${host}`,
          datastore: "ioredis",
          connection,
          minTime: 100,
          clearDatastore: false,
        }),
      ]),
    );
    return {
      gate: async (host) => {
        await byHost.get(host)?.schedule(async () => undefined);
      },
      close: async () => {
        await connection.disconnect();
      },
    };
  }
  if (impl === "rlf-queue") {
    const queue = new RateLimiterQueue(
      new RateLimiterRedis({
        storeClient: limitRedis,
        keyPrefix: `${prefix}rlf`,
        points: 10,
        duration: 1,
      }),
      { maxQueueSize: 100_000 },
    );
    return {
      gate: async (host) => {
        await queue.removeTokens(1, host);
      },
      close: async () => undefined,
    };
  }
  throw new Error(`unknown IMPL ${impl}`);
}

const { gate, close } = makeGate();
let completed = 0;

async function lane(host: string): Promise<void> {
  for (;;) {
    const job = await jobs.incr(`${prefix}jobs:${host}`);
    if (job > fetches) return;
    await gate(host);
    const response = await fetch(`${provider}/fetch?host=${host}&impl=${impl}`);
    await response.arrayBuffer();
    completed += 1;
  }
}

await Promise.all([jobs.ping(), limitRedis.ping()]);
await Promise.all(
  Array.from({ length: hosts.length * lanes }, async () => {
    const response = await fetch(`${provider}/warmup`);
    await response.arrayBuffer();
  }),
);
process.stdout.write("ready\n");
process.stdin.setEncoding("utf8");
await once(process.stdin, "data");
process.stdin.destroy();
await Promise.all(hosts.flatMap((host) => Array.from({ length: lanes }, () => lane(host))));
process.stdout.write(`${JSON.stringify({ completed })}\n`);
await close();
jobs.disconnect();
limitRedis.disconnect();
