/**
 * What services run against. Route handlers and scripts use the process-wide `getControlDeps()`;
 * tests pass their own (their database, their Redis, a driven clock).
 */
import type { PrismaClient } from "@/lib/generated/prisma/client";
import { getPrisma } from "@/lib/server/db";
import { loadEnv } from "@/lib/server/env";
import { createRedis } from "@/lib/server/redis";
import type { SnapshotPublisher } from "./outbox/publish-pending-snapshots";

export interface ControlDeps {
  readonly db: PrismaClient;
  /**
   * Publishes a new policy version right after its change commits (best effort, so enforcers hear
   * within milliseconds). Null leaves publication to the worker alone.
   */
  readonly publisher: SnapshotPublisher | null;
  /** Wall clock in ms: incident times are checked and snapshots compiled against it. */
  readonly nowMs: () => number;
}

/** Read services need only the database. */
export type ReadDeps = Pick<ControlDeps, "db">;

const globalForControl = globalThis as typeof globalThis & { limitplaneControlDeps?: ControlDeps };

/** The process-wide dependencies, created on first use. */
export function getControlDeps(): ControlDeps {
  if (globalForControl.limitplaneControlDeps === undefined) {
    const db = getPrisma();
    globalForControl.limitplaneControlDeps = {
      db,
      publisher: {
        db,
        redis: createRedis("control", { connectionName: "limitplane-publisher" }),
        prefix: loadEnv().REDIS_KEY_PREFIX,
      },
      nowMs: Date.now,
    };
  }
  return globalForControl.limitplaneControlDeps;
}

/** Replaces the process-wide dependencies (tests that call route handlers with their database). */
export function installControlDeps(deps: ControlDeps): void {
  globalForControl.limitplaneControlDeps = deps;
}
