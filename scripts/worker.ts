/**
 * `npm run worker`: the control plane's background process. Publishes new policy versions to
 * Redis from the outbox, records incident expiries in the audit log, and rolls the enforcers'
 * per-scope counts up into Postgres per minute (deleting rows past METRICS_RETENTION_DAYS). Run
 * as many copies as you like: one leads (a Postgres advisory lock), the others wait to take over.
 * Ctrl-C or SIGTERM stops it cleanly: current runs finish and the lead is released.
 */
import { checkRedisProtocol, RedisProtocolError } from "@limitplane/enforcer/publication";
import { getPrisma } from "../lib/server/db";
import { EnvError, loadEnv } from "../lib/server/env";
import { createRedis, createRegionRedis } from "../lib/server/redis";
import { createStandardJobs, startWorker } from "../lib/worker";

async function main(): Promise<void> {
  const env = loadEnv();
  const db = getPrisma();
  const redis = createRedis("control", { connectionName: "limitplane-worker" });
  // Refuses a Redis a newer release wrote; an older one's policy is republished by the job below.
  const protocol = await checkRedisProtocol(redis, env.REDIS_KEY_PREFIX, "control plane");
  if (protocol === "older") {
    console.log("worker: Redis holds an older protocol's policy; publishing it in this one");
  }
  // REGIONS: every region's Redis gets every version, from a job of its own. A region whose
  // Redis is down at start is not waited for: its job retries until it answers.
  const regions = env.REGIONS.map((region) => ({
    name: region.name,
    redis: createRegionRedis("control", region, {
      connectionName: `limitplane-worker-${region.name}`,
    }),
  }));
  const worker = startWorker({
    databaseUrl: env.DATABASE_URL,
    jobs: createStandardJobs({ db, redis, prefix: env.REDIS_KEY_PREFIX, regions }),
  });

  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    console.log(`worker: ${signal}, stopping`);
    worker
      .stop()
      .then(async () => {
        await db.$disconnect();
        redis.disconnect();
        for (const region of regions) region.redis.disconnect();
        process.exit(0);
      })
      .catch((error: unknown) => {
        console.error(`worker: ${error instanceof Error ? error.message : String(error)}`);
        process.exit(1);
      });
  };
  process.on("SIGINT", () => stop("SIGINT"));
  process.on("SIGTERM", () => stop("SIGTERM"));
}

main().catch((error: unknown) => {
  console.error(
    error instanceof EnvError || error instanceof RedisProtocolError
      ? error.message
      : `worker: ${error instanceof Error ? error.message : String(error)}`,
  );
  process.exit(1);
});
