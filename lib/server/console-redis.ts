/**
 * The console's one `control` connection for reading what enforcers report in Redis (heartbeats,
 * per-minute counts, recent rejections): created on first use, shared by every reader in the
 * process. Publication keeps its own (`lib/server/composition.ts`).
 */
import "server-only";
import type { RedisClient } from "@limitplane/enforcer/publication";
import { createRedis } from "./redis";

const globalForConsole = globalThis as typeof globalThis & { limitplaneConsoleRedis?: RedisClient };

export function consoleRedis(): RedisClient {
  globalForConsole.limitplaneConsoleRedis ??= createRedis("control", {
    connectionName: "limitplane-console-reads",
  });
  return globalForConsole.limitplaneConsoleRedis;
}
