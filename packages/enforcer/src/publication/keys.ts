/**
 * Where a published policy lives in Redis. Every name starts with the installation's
 * REDIS_KEY_PREFIX (lib/server/env.ts), so installations can share one Redis.
 *
 * - `${prefix}policy:current`: a hash with `version` (decimal), `checksum` (the snapshot's),
 *   `snapshot` (the snapshot as JSON) and `publishedAt` (Redis's clock, ms since the epoch).
 * - `${prefix}policy:announce`: a pub/sub channel; each message is JSON `{"version":N,"checksum":"..."}`.
 */

export interface PolicyRedisNames {
  /** The hash holding the current snapshot. */
  readonly current: string;
  /** The channel announcing each new version. */
  readonly announce: string;
}

export function policyRedisNames(prefix: string): PolicyRedisNames {
  return { current: `${prefix}policy:current`, announce: `${prefix}policy:announce` };
}
