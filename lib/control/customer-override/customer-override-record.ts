import {
  formatScope,
  type TCustomerOverride,
  ZCustomerOverride,
} from "@limitplane/enforcer/policy";
import type { Prisma } from "@/lib/generated/prisma/client";
import { AppError } from "../errors";
import type { Db } from "../stored";
import { auditView, isoOf, parseStored } from "../stored";
import type { VersionedEntity } from "../versioned-write";

/** A customer override (with its scope, its key)'s fields in the policy document: what `readStoredPolicy` reads. */
export const customerOverrideDocumentSelect = {
  scope: true,
  customerId: true,
  endpointClass: true,
  limit: true,
} satisfies Prisma.CustomerOverrideSelect;

export const customerOverrideSelect = {
  ...customerOverrideDocumentSelect,
  version: true,
  createdAt: true,
  updatedAt: true,
} satisfies Prisma.CustomerOverrideSelect;

type CustomerOverrideRow = Prisma.CustomerOverrideGetPayload<{
  select: typeof customerOverrideSelect;
}>;

/** A customer override, with its scope (`customer:C` or `customer:C/endpoint:E`): its key. */
export type CustomerOverrideRecord = TCustomerOverride & {
  readonly scope: string;
  readonly version: number;
  readonly createdAt: string;
  readonly updatedAt: string;
};

/** The key of a customer's override on one layer (null: all endpoints). */
export function overrideScope(customerId: string, endpointClass: string | null): string {
  return formatScope({ kind: "customer", customerId, endpointClass });
}

export function overrideLabel(scope: string): string {
  return `customer override "${scope}"`;
}

export function toCustomerOverrideRecord(row: CustomerOverrideRow): CustomerOverrideRecord {
  const override = parseStored(
    ZCustomerOverride,
    { customerId: row.customerId, endpointClass: row.endpointClass, limit: row.limit },
    overrideLabel(row.scope),
  );
  return {
    ...override,
    scope: row.scope,
    version: row.version,
    createdAt: isoOf(row.createdAt),
    updatedAt: isoOf(row.updatedAt),
  };
}

export async function findCustomerOverride(
  db: Db,
  customerId: string,
  endpointClass: string | null,
): Promise<CustomerOverrideRecord> {
  const scope = overrideScope(customerId, endpointClass);
  const row = await db.customerOverride.findUnique({
    where: { scope },
    select: customerOverrideSelect,
  });
  if (row === null) {
    throw new AppError(
      "NOT_FOUND",
      `Customer "${customerId}" has no override ${endpointClass === null ? "for all endpoints" : `on endpoint class "${endpointClass}"`}.`,
      { details: { entity: "Customer override", id: scope } },
    );
  }
  return toCustomerOverrideRecord(row);
}

/** A customer override as `versionedWrite` reads, checks and records it (by its scope). */
export function customerOverrideEntity(
  customerId: string,
  endpointClass: string | null,
): VersionedEntity<CustomerOverrideRecord> {
  const scope = overrideScope(customerId, endpointClass);
  return {
    find: (tx) => findCustomerOverride(tx, customerId, endpointClass),
    entityType: "customer-override",
    entityId: scope,
    customerId: () => customerId,
    label: overrideLabel(scope),
    view: auditView,
  };
}
