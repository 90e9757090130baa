import { type TTier, ZTier } from "@limitplane/enforcer/policy";
import type { Prisma } from "@/lib/generated/prisma/client";
import { notFound } from "../errors";
import type { Db } from "../stored";
import { auditView, isoOf, parseStored, toJson } from "../stored";
import type { VersionedEntity } from "../versioned-write";

/** A tier's fields in the policy document: what `readStoredPolicy` reads. */
export const tierDocumentSelect = {
  name: true,
  displayName: true,
  limit: true,
} satisfies Prisma.TierSelect;

export const tierSelect = {
  ...tierDocumentSelect,
  version: true,
  createdAt: true,
  updatedAt: true,
} satisfies Prisma.TierSelect;

type TierRow = Prisma.TierGetPayload<{ select: typeof tierSelect }>;

/** A tier as services return it. */
export type TierRecord = TTier & {
  readonly version: number;
  readonly createdAt: string;
  readonly updatedAt: string;
};

export function tierLabel(name: string): string {
  return `tier "${name}"`;
}

export function toTierRecord(row: TierRow): TierRecord {
  const tier = parseStored(
    ZTier,
    { name: row.name, displayName: row.displayName, limit: row.limit },
    tierLabel(row.name),
  );
  return {
    ...tier,
    version: row.version,
    createdAt: isoOf(row.createdAt),
    updatedAt: isoOf(row.updatedAt),
  };
}

/** The columns of a tier. */
export function tierData(tier: TTier) {
  return { displayName: tier.displayName, limit: toJson(tier.limit) };
}

/** The tier, or NOT_FOUND. */
export async function findTier(db: Db, name: string): Promise<TierRecord> {
  const row = await db.tier.findUnique({ where: { name }, select: tierSelect });
  if (row === null) throw notFound("Tier", name);
  return toTierRecord(row);
}

/** A tier as `versionedWrite` reads, checks and records it. */
export function tierEntity(name: string): VersionedEntity<TierRecord> {
  return {
    find: (tx) => findTier(tx, name),
    entityType: "tier",
    entityId: name,
    label: tierLabel(name),
    view: auditView,
  };
}
