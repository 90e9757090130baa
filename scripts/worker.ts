/**
 * `npm run worker`: the control plane's background process. Publishes new policy versions to
 * Redis from the outbox, records incident expiries in the audit log, and rolls the enforcers'
 * per-scope counts up into Postgres per minute (deleting rows past METRICS_RETENTION_DAYS). Run
 * as many copies as you like: one leads (a Postgres advisory lock), the others wait to take over.
 * Ctrl-C or SIGTERM stops it cleanly: current runs finish and the lead is released.
 */
import { getPrisma } from "../lib/server/db";
import { EnvError, loadEnv } from "../lib/server/env";
import { createRedis } from "../lib/server/redis";
import { createStandardJobs, startWorker } from "../lib/worker";

function main(): void {
  const env = loadEnv();
  const db = getPrisma();
  const redis = createRedis("control", { connectionName: "limitplane-worker" });
  const worker = startWorker({
    databaseUrl: env.DATABASE_URL,
    jobs: createStandardJobs({ db, redis, prefix: env.REDIS_KEY_PREFIX }),
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

try {
  main();
} catch (error: unknown) {
  console.error(
    error instanceof EnvError
      ? error.message
      : `worker: ${error instanceof Error ? error.message : String(error)}`,
  );
  process.exit(1);
}
