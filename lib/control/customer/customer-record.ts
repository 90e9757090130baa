import { type TCustomer, ZCustomer } from "@limitplane/enforcer/policy";
import type { Prisma } from "@/lib/generated/prisma/client";
import { notFound } from "../errors";
import type { Db } from "../stored";
import { auditView, isoOf, parseStored } from "../stored";
import type { VersionedEntity } from "../versioned-write";

/** A customer's fields in the policy document: what `readStoredPolicy` reads. */
export const customerDocumentSelect = {
  id: true,
  displayName: true,
  tier: true,
} satisfies Prisma.CustomerSelect;

export const customerSelect = {
  ...customerDocumentSelect,
  version: true,
  createdAt: true,
  updatedAt: true,
} satisfies Prisma.CustomerSelect;

type CustomerRow = Prisma.CustomerGetPayload<{ select: typeof customerSelect }>;

export type CustomerRecord = TCustomer & {
  readonly version: number;
  readonly createdAt: string;
  readonly updatedAt: string;
};

export function customerLabel(id: string): string {
  return `customer "${id}"`;
}

export function toCustomerRecord(row: CustomerRow): CustomerRecord {
  const { version, createdAt, updatedAt, ...fields } = row;
  const customer = parseStored(ZCustomer, fields, customerLabel(row.id));
  return { ...customer, version, createdAt: isoOf(createdAt), updatedAt: isoOf(updatedAt) };
}

export async function findCustomer(db: Db, id: string): Promise<CustomerRecord> {
  const row = await db.customer.findUnique({ where: { id }, select: customerSelect });
  if (row === null) throw notFound("Customer", id);
  return toCustomerRecord(row);
}

/** A customer as `versionedWrite` reads, checks and records it. */
export function customerEntity(id: string): VersionedEntity<CustomerRecord> {
  return {
    find: (tx) => findCustomer(tx, id),
    entityType: "customer",
    entityId: id,
    customerId: () => id,
    label: customerLabel(id),
    view: auditView,
  };
}
