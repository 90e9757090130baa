/**
 * The console's one `control` connection for reading what enforcers report in Redis (heartbeats,
 * per-minute counts, recent rejections): created on first use, shared by every reader in the
 * process. Publication keeps its own (`lib/server/composition.ts`).
 */
import "server-only";
import type { RedisClient } from "@limitplane/enforcer/publication";
import type { Region } from "./env";
import { createRedis, createRegionRedis } from "./redis";

const globalForConsole = globalThis as typeof globalThis & {
  limitplaneConsoleRedis?: RedisClient;
  limitplaneConsoleRegionRedis?: Map<string, RedisClient>;
};

export function consoleRedis(): RedisClient {
  globalForConsole.limitplaneConsoleRedis ??= createRedis("control", {
    connectionName: "limitplane-console-reads",
  });
  return globalForConsole.limitplaneConsoleRedis;
}

/** The console's read connection to one region's Redis (REGIONS), created on first use. */
export function consoleRegionRedis(region: Region): RedisClient {
  globalForConsole.limitplaneConsoleRegionRedis ??= new Map();
  const clients = globalForConsole.limitplaneConsoleRegionRedis;
  let client = clients.get(region.name);
  if (client === undefined) {
    client = createRegionRedis("control", region, {
      connectionName: `limitplane-console-reads-${region.name}`,
    });
    clients.set(region.name, client);
  }
  return client;
}
