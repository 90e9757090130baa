import { type TDescriptorRule, ZDescriptorRule } from "@limitplane/enforcer/policy";
import type { Prisma } from "@/lib/generated/prisma/client";
import { notFound } from "../errors";
import type { Db } from "../stored";
import { auditView, isoOf, parseStored, toJson } from "../stored";
import type { VersionedEntity } from "../versioned-write";

/** A descriptor rule's fields in the policy document: what `readStoredPolicy` reads. */
export const descriptorRuleDocumentSelect = {
  id: true,
  domain: true,
  descriptor: true,
  limit: true,
  mode: true,
  onStoreFailure: true,
  durability: true,
  name: true,
  replaces: true,
  wildcardCounter: true,
  detailedMetric: true,
  raises: true,
} satisfies Prisma.DescriptorRuleSelect;

export const descriptorRuleSelect = {
  ...descriptorRuleDocumentSelect,
  version: true,
  createdAt: true,
  updatedAt: true,
} satisfies Prisma.DescriptorRuleSelect;

type DescriptorRuleRow = Prisma.DescriptorRuleGetPayload<{ select: typeof descriptorRuleSelect }>;

export type DescriptorRuleRecord = TDescriptorRule & {
  readonly version: number;
  readonly createdAt: string;
  readonly updatedAt: string;
};

export function descriptorRuleLabel(id: string): string {
  return `descriptor rule "${id}"`;
}

/** The row's columns for a rule (everything but the id). */
export function descriptorRuleData(rule: TDescriptorRule) {
  return {
    domain: rule.domain,
    descriptor: toJson(rule.descriptor),
    limit: typeof rule.limit === "string" ? rule.limit : toJson(rule.limit),
    mode: rule.mode,
    onStoreFailure: rule.onStoreFailure,
    durability: rule.durability ?? null,
    name: rule.name,
    replaces: toJson(rule.replaces),
    wildcardCounter: rule.wildcardCounter,
    detailedMetric: rule.detailedMetric,
    raises: toJson(rule.raises),
  };
}

/** The document fields of a row, unparsed; a null durability (async) is left out, as written. */
export function descriptorRuleDocument(
  row: Prisma.DescriptorRuleGetPayload<{ select: typeof descriptorRuleDocumentSelect }>,
) {
  const { durability, ...rest } = row;
  return durability === null ? rest : { ...rest, durability };
}

export function toDescriptorRuleRecord(row: DescriptorRuleRow): DescriptorRuleRecord {
  const rule = parseStored(
    ZDescriptorRule,
    descriptorRuleDocument({
      id: row.id,
      domain: row.domain,
      descriptor: row.descriptor,
      limit: row.limit,
      mode: row.mode,
      onStoreFailure: row.onStoreFailure,
      durability: row.durability,
      name: row.name,
      replaces: row.replaces,
      wildcardCounter: row.wildcardCounter,
      detailedMetric: row.detailedMetric,
      raises: row.raises,
    }),
    descriptorRuleLabel(row.id),
  );
  return {
    ...rule,
    version: row.version,
    createdAt: isoOf(row.createdAt),
    updatedAt: isoOf(row.updatedAt),
  };
}

export async function findDescriptorRule(db: Db, id: string): Promise<DescriptorRuleRecord> {
  const row = await db.descriptorRule.findUnique({ where: { id }, select: descriptorRuleSelect });
  if (row === null) throw notFound("Descriptor rule", id);
  return toDescriptorRuleRecord(row);
}

/** A descriptor rule as `versionedWrite` reads, checks and records it. */
export function descriptorRuleEntity(id: string): VersionedEntity<DescriptorRuleRecord> {
  return {
    find: (tx) => findDescriptorRule(tx, id),
    entityType: "descriptor-rule",
    entityId: id,
    label: descriptorRuleLabel(id),
    view: auditView,
  };
}
