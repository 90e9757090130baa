import { parseSnapshot, type TSnapshot } from "@limitplane/enforcer/policy";
import { getControlDeps, type ReadDeps } from "../control-deps";
import { POLICY_SNAPSHOT_TOPIC } from "../outbox/outbox";
import { noPolicyYet } from "./run-policy-change";

export interface CurrentSnapshot {
  readonly version: number;
  readonly checksum: string;
  readonly snapshot: TSnapshot;
  /** When the version was made. */
  readonly createdAt: string;
  /** When it reached Redis; null while it waits for the publisher. */
  readonly publishedAt: string | null;
}

/** The latest compiled snapshot, from Postgres (what enforcers should be running). */
export async function getCurrentSnapshot(
  deps: ReadDeps = getControlDeps(),
): Promise<CurrentSnapshot> {
  const latest = await deps.db.policyVersion.findFirst({
    orderBy: { version: "desc" },
    select: { version: true, checksum: true, snapshot: true, createdAt: true },
  });
  if (latest === null) throw noPolicyYet();
  const parsed = parseSnapshot(latest.snapshot);
  if (!parsed.ok) {
    throw new Error(
      `The stored snapshot of version ${latest.version} is invalid: ${parsed.errors[0]?.message}`,
    );
  }
  const outbox = await deps.db.outboxEvent.findFirst({
    where: { topic: POLICY_SNAPSHOT_TOPIC, payload: { equals: { version: latest.version } } },
    select: { publishedAt: true },
  });
  return {
    version: latest.version,
    checksum: latest.checksum,
    snapshot: parsed.value,
    createdAt: latest.createdAt.toISOString(),
    publishedAt: outbox?.publishedAt?.toISOString() ?? null,
  };
}
