/**
 * `npm run worker`: the control plane's background process. Publishes new policy versions to
 * Redis from the outbox and records incident expiries in the audit log. Run as many copies as you
 * like: one leads (a Postgres advisory lock), the others wait to take over. Ctrl-C or SIGTERM
 * stops it cleanly: current runs finish and the lead is released.
 */
import { getPrisma } from "../lib/server/db";
import { EnvError, loadEnv } from "../lib/server/env";
import { createRedis } from "../lib/server/redis";
import { publishSnapshotsJob, recordIncidentExpiriesJob, startWorker } from "../lib/worker";

function main(): void {
  const env = loadEnv();
  const db = getPrisma();
  const redis = createRedis("control", { connectionName: "limitplane-worker" });
  const worker = startWorker({
    databaseUrl: env.DATABASE_URL,
    jobs: [
      publishSnapshotsJob({
        publisher: { db, redis, prefix: env.REDIS_KEY_PREFIX },
        onDrain(outcome) {
          if (outcome.status === "published" && outcome.versions.length > 0) {
            const versions = outcome.versions.map((published) => published.version);
            console.log(`worker: published policy version ${versions.join(", ")}`);
          } else if (outcome.status === "failed") {
            console.log(
              `worker: publishing failed (${outcome.error}); retrying at ${new Date(outcome.retryAtMs).toISOString()}`,
            );
          }
        },
        onRepublish(outcome) {
          if (outcome.status === "republished") {
            console.log(
              `worker: Redis had ${outcome.redisHad === null ? "no policy" : `version ${outcome.redisHad}`}; published version ${outcome.version} again`,
            );
          }
        },
      }),
      recordIncidentExpiriesJob({
        deps: { db, publisher: null, nowMs: Date.now },
        onRecorded: (ids) => console.log(`worker: recorded the expiry of ${ids.join(", ")}`),
      }),
    ],
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
