/**
 * One version for everything the control plane and the enforcers exchange through Redis: the
 * policy's keys and their layout (`keys.ts`, `binary-snapshot.ts`), the announcements, the
 * limiter state, the metrics and the reports. The publisher writes it into the policy head
 * (`format`); the control plane's worker and every enforcer read it when they start and refuse to
 * run against another version with a {@link RedisProtocolError} naming both.
 *
 * Every change to what is published or stored in Redis bumps it, in the same commit. History:
 * 2, the head and delta log with a snapshot as one hash of JSON entries; 3, the snapshot as one
 * binary value (`{policy}:snapshot:<v>`, `binary-snapshot.ts`).
 */
import { policyRedisNames } from "./keys";

export const REDIS_PROTOCOL_VERSION = 3;

/** Who found the mismatch, for the message. */
export type ProtocolReader = "enforcer" | "control plane";

/**
 * Redis holds data of another protocol version than this release speaks. The remedy is to run the
 * control plane and the enforcers from one release: the control plane republishes the policy in
 * its own version when Redis holds an older one, and refuses to touch a newer one.
 */
export class RedisProtocolError extends Error {
  /** The version Redis holds (the policy head's `format`). */
  readonly storedVersion: number | null;
  /** The version this release speaks: {@link REDIS_PROTOCOL_VERSION}. */
  readonly expectedVersion: number;
  readonly keyPrefix: string;

  constructor(options: {
    readonly storedVersion: number | null;
    readonly keyPrefix: string;
    readonly reader: ProtocolReader;
  }) {
    const stored = options.storedVersion === null ? "an unreadable" : String(options.storedVersion);
    const isNewer =
      options.storedVersion !== null && options.storedVersion > REDIS_PROTOCOL_VERSION;
    const remedy =
      options.reader === "enforcer"
        ? isNewer
          ? "upgrade this enforcer to the control plane's release"
          : "upgrade the control plane (its worker republishes the policy in the new version when it starts), or run this enforcer from the control plane's release"
        : "upgrade this control plane to the release that wrote it; it does not overwrite a newer protocol";
    super(
      `Redis protocol mismatch under key prefix "${options.keyPrefix}": Redis holds protocol version ${stored}, this ${options.reader} speaks version ${REDIS_PROTOCOL_VERSION}: ${remedy}`,
    );
    this.name = "RedisProtocolError";
    this.storedVersion = options.storedVersion;
    this.expectedVersion = REDIS_PROTOCOL_VERSION;
    this.keyPrefix = options.keyPrefix;
  }
}

/** A head's `format` field as a protocol version; null when it is not a whole number. */
export function parseProtocolVersion(field: string | null | undefined): number | null {
  if (field === null || field === undefined || !/^[0-9]{1,9}$/.test(field)) return null;
  return Number(field);
}

/** The commands {@link checkRedisProtocol} sends; ioredis's client satisfies it. */
export interface ProtocolReadingRedis {
  hget(key: string, field: string): Promise<string | null>;
}

/**
 * What Redis holds under `prefix` compared with this release's protocol: `none` (nothing
 * published yet), `same`, or `older` (only a control plane hears this: it republishes the policy
 * in its own version). Throws a {@link RedisProtocolError} for anything else: any other version
 * for an enforcer; a newer or unreadable one for a control plane, which must not overwrite it.
 */
export async function checkRedisProtocol(
  redis: ProtocolReadingRedis,
  prefix: string,
  reader: ProtocolReader,
): Promise<"none" | "same" | "older"> {
  const head = policyRedisNames(prefix).head;
  const [version, format] = await Promise.all([
    redis.hget(head, "version"),
    redis.hget(head, "format"),
  ]);
  if (version === null && format === null) return "none";
  const stored = parseProtocolVersion(format);
  if (stored === REDIS_PROTOCOL_VERSION) return "same";
  if (reader === "control plane" && stored !== null && stored < REDIS_PROTOCOL_VERSION) {
    return "older";
  }
  throw new RedisProtocolError({ storedVersion: stored, keyPrefix: prefix, reader });
}
