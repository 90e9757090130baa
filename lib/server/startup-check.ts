/**
 * Node-only startup, imported by instrumentation.ts. A malformed DATABASE_URL or REDIS_URL stops
 * the server here with one line that names the variable, not a stack trace. With
 * LIMITPLANE_WORKER=in-process the console also runs the worker's jobs (the embedded database
 * serves one connection, so there can be no separate worker process).
 */
import { EnvError, loadEnv } from "@/lib/server/env";

export function checkEnvOrExit(): void {
  readConfigOrExit(loadEnv);
}

/** `read()`, or, when it throws `EnvError`, its lines on stderr and exit 1 (no stack trace). */
export function readConfigOrExit<T>(read: () => T): T {
  try {
    return read();
  } catch (error: unknown) {
    if (error instanceof EnvError) {
      console.error(error.message);
      process.exit(1);
    }
    throw error;
  }
}

export async function startInProcessWorkerIfAsked(): Promise<void> {
  const env = loadEnv();
  if (env.LIMITPLANE_WORKER !== "in-process") return;
  const [{ getPrisma }, { createRedis, createRegionRedis }, { createStandardJobs, startWorker }] =
    await Promise.all([
      import("@/lib/server/db"),
      import("@/lib/server/redis"),
      import("@/lib/worker"),
    ]);
  const db = getPrisma();
  const redis = createRedis("control", { connectionName: "limitplane-worker" });
  // REGIONS: a publication job and a roll-up per region, as in scripts/worker.ts.
  const regions = env.REGIONS.map((region) => ({
    name: region.name,
    redis: createRegionRedis("control", region, {
      connectionName: `limitplane-worker-${region.name}`,
    }),
  }));
  const worker = startWorker({
    databaseUrl: null,
    jobs: createStandardJobs({ db, redis, prefix: env.REDIS_KEY_PREFIX, regions }),
  });
  const stop = () => {
    void worker.stop().finally(() => {
      redis.disconnect();
      for (const region of regions) region.redis.disconnect();
    });
  };
  process.once("SIGTERM", stop);
  process.once("SIGINT", stop);
}
