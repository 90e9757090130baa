import { type TOutboundBudget, ZOutboundBudget } from "@limitplane/enforcer/policy";
import type { Prisma } from "@/lib/generated/prisma/client";
import { notFound } from "../errors";
import type { Db } from "../stored";
import { auditView, isoOf, jsonColumn, parseStored } from "../stored";
import type { VersionedEntity } from "../versioned-write";

/** An outbound budget's fields in the policy document: what `readStoredPolicy` reads. */
export const outboundBudgetDocumentSelect = {
  name: true,
  displayName: true,
  limit: true,
  concurrency: true,
  maxWaitMs: true,
  keyBy: true,
  raise: true,
} satisfies Prisma.OutboundBudgetSelect;

export const outboundBudgetSelect = {
  ...outboundBudgetDocumentSelect,
  version: true,
  createdAt: true,
  updatedAt: true,
} satisfies Prisma.OutboundBudgetSelect;

type OutboundBudgetRow = Prisma.OutboundBudgetGetPayload<{ select: typeof outboundBudgetSelect }>;

export type OutboundBudgetRecord = TOutboundBudget & {
  readonly version: number;
  readonly createdAt: string;
  readonly updatedAt: string;
};

export function outboundBudgetLabel(name: string): string {
  return `outbound budget "${name}"`;
}

/** The row's columns for a budget (everything but the name). */
export function outboundBudgetData(budget: TOutboundBudget) {
  return {
    displayName: budget.displayName,
    limit: jsonColumn(budget.limit),
    concurrency: jsonColumn(budget.concurrency),
    maxWaitMs: budget.maxWaitMs,
    keyBy: budget.keyBy,
    raise: jsonColumn(budget.raise),
  };
}

export function toOutboundBudgetRecord(row: OutboundBudgetRow): OutboundBudgetRecord {
  const { version, createdAt, updatedAt, ...fields } = row;
  const budget = parseStored(ZOutboundBudget, fields, outboundBudgetLabel(row.name));
  return { ...budget, version, createdAt: isoOf(createdAt), updatedAt: isoOf(updatedAt) };
}

export async function findOutboundBudget(db: Db, name: string): Promise<OutboundBudgetRecord> {
  const row = await db.outboundBudget.findUnique({ where: { name }, select: outboundBudgetSelect });
  if (row === null) throw notFound("Outbound budget", name);
  return toOutboundBudgetRecord(row);
}

/** An outbound budget as `versionedWrite` reads, checks and records it. */
export function outboundBudgetEntity(name: string): VersionedEntity<OutboundBudgetRecord> {
  return {
    find: (tx) => findOutboundBudget(tx, name),
    entityType: "outbound-budget",
    entityId: name,
    label: outboundBudgetLabel(name),
    view: auditView,
  };
}
