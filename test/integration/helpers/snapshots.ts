/**
 * Snapshots for the enforcer's tests (published with `publishTestSnapshot` from
 * `@limitplane/enforcer/testing`, or `publishWhole` here to damage one or miss its announcement:
 * both the control plane's own newer-only `publishPolicySnapshot`).
 */
import {
  PolicyState,
  type TPolicyDocumentInput,
  type TSnapshot,
} from "@limitplane/enforcer/policy";
import {
  type PolicyPublishingRedis,
  policyRedisNames,
  publishPolicySnapshot,
} from "@limitplane/enforcer/publication";
import { exampleSnapshot } from "@limitplane/enforcer/testing";
import type { Redis } from "ioredis";
import { expect } from "vitest";

/** The example policy compiled as `version`, after `edit`. */
export function snapshotVersion(
  version: number,
  edit: (input: TPolicyDocumentInput) => void = () => {},
): TSnapshot {
  return exampleSnapshot(edit, { version, compiledAt: new Date().toISOString() });
}

/**
 * Publishes `snapshot` whole as the control plane does, its bytes damaged by `damage`, and
 * announced on `channel` (another channel than the enforcers': an announcement they miss).
 */
export async function publishWhole(
  redis: Redis,
  prefix: string,
  snapshot: TSnapshot,
  options: { damage?: (bytes: Uint8Array) => void; channel?: string } = {},
): Promise<void> {
  const state = PolicyState.fromSnapshot(snapshot);
  const bytes = state.toBinary();
  options.damage?.(bytes);
  const announce = policyRedisNames(prefix).announce;
  const channel = options.channel ?? announce;
  const reroute = (args: (string | number)[]) =>
    args.map((arg) => (arg === announce ? channel : arg));
  const rerouted: PolicyPublishingRedis = {
    evalsha: (sha, keys, ...args) => redis.evalsha(sha, keys, ...reroute(args)),
    eval: (script, keys, ...args) => redis.eval(script, keys, ...reroute(args)),
    hgetall: (key) => redis.hgetall(key),
    set: (key, value, expiry, ms) => redis.set(key, value, expiry, ms),
    append: (key, value) => redis.append(key, value),
    del: (...keys) => redis.del(...keys),
  };
  const result = await publishPolicySnapshot(rerouted, prefix, {
    version: state.version,
    checksum: state.checksum,
    entries: state.size.entries,
    mode: "publish",
    bytes,
  });
  expect(result.status).toBe("applied");
}

/** Damage for {@link publishWhole}: one byte in the middle flipped, so the digest gives it away. */
export function flipMiddleByte(bytes: Uint8Array): void {
  const at = bytes.length >> 1;
  bytes[at] = (bytes[at] ?? 0) ^ 0xff;
}
