/**
 * Snapshots for the enforcer's tests, published with the control plane's own `publishSnapshot`
 * (hash `${prefix}policy:current`, channel `${prefix}policy:announce`, newer versions only).
 */

import type { TPolicyDocumentInput, TSnapshot } from "@limitplane/enforcer/policy";
import { publishSnapshot } from "@limitplane/enforcer/publication";
import { exampleSnapshot } from "@limitplane/enforcer/testing";
import type { Redis } from "ioredis";

/** The example policy compiled as `version`, after `edit`. */
export function snapshotVersion(
  version: number,
  edit: (input: TPolicyDocumentInput) => void = () => {},
): TSnapshot {
  return exampleSnapshot(edit, { version, compiledAt: new Date().toISOString() });
}

/** Makes `snapshot` current and announces it; throws if Redis already had it or a newer one. */
export async function publishTestSnapshot(
  redis: Redis,
  prefix: string,
  snapshot: TSnapshot,
): Promise<void> {
  const result = await publishSnapshot(redis, prefix, {
    version: snapshot.version,
    checksum: snapshot.checksum,
    snapshotJson: JSON.stringify(snapshot),
  });
  if (!result.applied) {
    throw new Error(`version ${snapshot.version} refused: Redis has ${result.currentVersion}`);
  }
}
