/**
 * The one place that creates ioredis clients: the console, the worker and the enforcers all call
 * it (the app's `lib/server/redis.ts` only fills in the URL from its environment). Each client has
 * a role, and each role has timeouts and reconnect behaviour chosen for what it does:
 *
 * | role        | used by                              | when Redis is down                        |
 * | ----------- | ------------------------------------ | ----------------------------------------- |
 * | `decisions` | the enforcer's hot path              | commands fail at once (no offline queue,  |
 * |             |                                      | no retries) so the failure policy decides |
 * | `control`   | console pages, publisher, worker     | commands wait up to `commandTimeoutMs`    |
 * |             |                                      | (queued while reconnecting), then fail    |
 * | `subscriber`| snapshot announcements (pub/sub)     | reconnects forever and resubscribes       |
 *
 * Every role reconnects by itself with capped exponential backoff (50 ms doubling to 2 s), so a
 * Redis restart heals without a process restart. Nothing waits forever: connecting is bounded by
 * `connectTimeout` and every command by `commandTimeout`.
 */
import { Redis, type RedisOptions } from "ioredis";

export type RedisRole = "decisions" | "control" | "subscriber";

export interface CreateRedisOptions {
  /** `redis://` or `rediss://` URL of the shared Redis. */
  url: string;
  /** Per-command deadline. @default 1000 for control, 250 for decisions, none for subscriber */
  commandTimeoutMs?: number;
  /** Shown in `CLIENT LIST`, which helps at three in the morning. */
  connectionName?: string;
}

/** Delay before reconnect attempt `attempt` (1-based): 50 ms doubling, capped at 2 s. */
export function reconnectDelayMs(attempt: number): number {
  return Math.min(2_000, 50 * 2 ** Math.min(attempt - 1, 6));
}

export function redisOptionsFor(
  role: RedisRole,
  options: Omit<CreateRedisOptions, "url"> = {},
): RedisOptions {
  const common: RedisOptions = {
    connectTimeout: 2_000,
    retryStrategy: reconnectDelayMs,
    // Never keep a half-open socket for minutes: detect a dead peer within ~15 s.
    keepAlive: 5_000,
    lazyConnect: false,
    connectionName: options.connectionName ?? `limitplane-${role}`,
  };
  switch (role) {
    case "decisions":
      return {
        ...common,
        enableOfflineQueue: false,
        maxRetriesPerRequest: 0,
        commandTimeout: options.commandTimeoutMs ?? 250,
        autoResendUnfulfilledCommands: false,
      };
    case "control":
      return {
        ...common,
        enableOfflineQueue: true,
        maxRetriesPerRequest: 1,
        commandTimeout: options.commandTimeoutMs ?? 1_000,
      };
    case "subscriber":
      return {
        ...common,
        enableOfflineQueue: true,
        maxRetriesPerRequest: null,
        autoResubscribe: true,
      };
    default: {
      const unknownRole: never = role;
      throw new Error(`unknown Redis role ${String(unknownRole)}`);
    }
  }
}

/** A new client for `role`. The caller owns it and must `quit()` it. */
export function createRedisClient(role: RedisRole, options: CreateRedisOptions): Redis {
  const client = new Redis(options.url, redisOptionsFor(role, options));
  // ioredis emits "error" on every failed reconnect; an unhandled "error" event would crash the
  // process. Callers that care observe `status` or the failing commands instead.
  client.on("error", () => {});
  return client;
}
