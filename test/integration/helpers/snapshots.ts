/**
 * Snapshots for the enforcer's tests, published the way the control plane publishes them (the
 * fixed contract: hash `${prefix}policy:current`, channel `${prefix}policy:announce`).
 */
import type { Redis } from "ioredis";
import { exampleSnapshot } from "@/lib/policy/fixtures/policy-factory";
import type { TPolicyDocumentInput, TSnapshot } from "@/lib/policy/schemas";

/** The example policy compiled as `version`, after `edit`. */
export function snapshotVersion(
  version: number,
  edit: (input: TPolicyDocumentInput) => void = () => {},
): TSnapshot {
  return exampleSnapshot(edit, { version, compiledAt: new Date().toISOString() });
}

/** Makes `snapshot` current and announces it (newer-only, like the publisher's script). */
export async function publishTestSnapshot(
  redis: Redis,
  prefix: string,
  snapshot: TSnapshot,
): Promise<void> {
  const stored = Number((await redis.hget(`${prefix}policy:current`, "version")) ?? "0");
  if (snapshot.version <= stored) throw new Error(`version ${snapshot.version} <= ${stored}`);
  await redis.hset(`${prefix}policy:current`, {
    version: String(snapshot.version),
    checksum: snapshot.checksum,
    snapshot: JSON.stringify(snapshot),
    publishedAt: String(Date.now()),
  });
  await redis.publish(
    `${prefix}policy:announce`,
    JSON.stringify({ version: snapshot.version, checksum: snapshot.checksum }),
  );
}
