/**
 * Where a published policy lives in Redis. Every name starts with the installation's
 * REDIS_KEY_PREFIX (lib/server/env.ts), so installations can share one Redis. The keys a script
 * writes together share the hash tag `{policy}`, so they sit in one slot of a Redis Cluster.
 *
 * | name | type | content |
 * | --- | --- | --- |
 * | `{policy}:head` | hash | `version`, `checksum` (of the entry set at that version), `entries`, `publishedAt` (Redis's clock, ms), `snapshotVersion`, `snapshotChecksum`, `snapshotEntries`, `format` (`REDIS_PROTOCOL_VERSION`, `protocol.ts`) |
 * | `{policy}:snapshot:<v>` | string | the whole set at version v as one binary value (`binary-snapshot.ts`), never changed once written |
 * | `{policy}:deltas` | hash | version → delta JSON, for every version after `snapshotVersion` (and a few before) |
 * | `{policy}:build:<nonce>` | string | a snapshot being written; renamed to `snapshot:<v>` when complete, expires if abandoned |
 * | `policy:announce` | channel | `{"version","base","checksum","delta"}`, the delta inline when small, else null |
 */

export interface PolicyRedisNames {
  /** The channel announcing each new version. */
  readonly announce: string;
  /** The head of the published policy: version, checksum, the snapshot it builds on. */
  readonly head: string;
  /** The deltas after the snapshot, by version. */
  readonly deltas: string;
  /** The immutable snapshot of the whole set at `version`. */
  snapshot(version: number): string;
  /** A snapshot being written. */
  build(nonce: string): string;
}

export function policyRedisNames(prefix: string): PolicyRedisNames {
  return {
    announce: `${prefix}policy:announce`,
    head: `${prefix}{policy}:head`,
    deltas: `${prefix}{policy}:deltas`,
    snapshot: (version) => `${prefix}{policy}:snapshot:${version}`,
    build: (nonce) => `${prefix}{policy}:build:${nonce}`,
  };
}
