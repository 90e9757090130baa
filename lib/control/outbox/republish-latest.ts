/**
 * Repairs a Redis that lost the policy: Redis here keeps nothing on disk, so a restart (or a
 * failover to an empty replica) leaves no snapshot while the outbox holds nothing pending, and a
 * newly started enforcer would find nothing to apply. When Redis's version is missing or behind
 * the latest stored version, the latest is published again; `publishSnapshot` only ever moves the
 * version forward, so this is harmless when it races a normal publication.
 */
import { parseSnapshot } from "@limitplane/enforcer/policy";
import { policyRedisNames, publishSnapshot } from "@limitplane/enforcer/publication";
import type { SnapshotPublisher } from "./publish-pending-snapshots";

export interface VersionReadingRedis {
  hget(key: string, field: string): Promise<string | null>;
}

export type RepublishOutcome =
  | { readonly status: "current"; readonly version: number | null }
  | { readonly status: "republished"; readonly version: number; readonly redisHad: number | null };

export async function republishLatestIfBehind(
  publisher: SnapshotPublisher & { readonly redis: VersionReadingRedis },
): Promise<RepublishOutcome> {
  const latest = await publisher.db.policyVersion.findFirst({
    orderBy: { version: "desc" },
    select: { version: true },
  });
  if (latest === null) return { status: "current", version: null };
  const raw = await publisher.redis.hget(policyRedisNames(publisher.prefix).current, "version");
  const redisHad = raw === null ? null : Number(raw);
  if (redisHad !== null && Number.isSafeInteger(redisHad) && redisHad >= latest.version) {
    return { status: "current", version: redisHad };
  }
  const stored = await publisher.db.policyVersion.findUnique({
    where: { version: latest.version },
    select: { snapshot: true },
  });
  const snapshot = parseSnapshot(stored?.snapshot);
  if (!snapshot.ok) {
    throw new Error(
      `policy version ${latest.version} is stored damaged: ${snapshot.errors[0]?.message ?? "invalid"}`,
    );
  }
  await publishSnapshot(publisher.redis, publisher.prefix, {
    version: latest.version,
    checksum: snapshot.value.checksum,
    snapshotJson: JSON.stringify(snapshot.value),
  });
  return { status: "republished", version: latest.version, redisHad };
}
