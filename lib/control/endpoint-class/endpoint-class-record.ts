import { type TEndpointClass, ZEndpointClass } from "@limitplane/enforcer/policy";
import type { Prisma } from "@/lib/generated/prisma/client";
import { notFound, validationError } from "../errors";
import type { Db } from "../stored";
import { auditView, isoOf, jsonColumn, parseStored, toJson } from "../stored";
import type { VersionedEntity } from "../versioned-write";

/** An endpoint class's fields in the policy document: what `readStoredPolicy` reads. */
export const endpointClassDocumentSelect = {
  name: true,
  displayName: true,
  match: true,
  cost: true,
  limits: true,
  anonymousLimit: true,
  ceiling: true,
  keyBy: true,
} satisfies Prisma.EndpointClassSelect;

export const endpointClassSelect = {
  ...endpointClassDocumentSelect,
  version: true,
  createdAt: true,
  updatedAt: true,
} satisfies Prisma.EndpointClassSelect;

type EndpointClassRow = Prisma.EndpointClassGetPayload<{ select: typeof endpointClassSelect }>;

export type EndpointClassRecord = TEndpointClass & {
  readonly version: number;
  readonly createdAt: string;
  readonly updatedAt: string;
};

export function endpointClassLabel(name: string): string {
  return `endpoint class "${name}"`;
}

export function toEndpointClassRecord(row: EndpointClassRow): EndpointClassRecord {
  const { version, createdAt, updatedAt, ...fields } = row;
  const endpointClass = parseStored(ZEndpointClass, fields, endpointClassLabel(row.name));
  return { ...endpointClass, version, createdAt: isoOf(createdAt), updatedAt: isoOf(updatedAt) };
}

/** The columns of an endpoint class; match rules in canonical order (path, then method). */
export function endpointClassData(endpointClass: TEndpointClass) {
  const match = [...endpointClass.match].sort((a, b) =>
    a.path === b.path ? compare(a.method, b.method) : compare(a.path, b.path),
  );
  return {
    displayName: endpointClass.displayName,
    match: toJson(match),
    cost: endpointClass.cost,
    limits: toJson(endpointClass.limits),
    anonymousLimit: jsonColumn(endpointClass.anonymousLimit),
    ceiling: jsonColumn(endpointClass.ceiling),
    keyBy: endpointClass.keyBy,
  };
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

export async function findEndpointClass(db: Db, name: string): Promise<EndpointClassRecord> {
  const row = await db.endpointClass.findUnique({ where: { name }, select: endpointClassSelect });
  if (row === null) throw notFound("Endpoint class", name);
  return toEndpointClassRecord(row);
}

/** An endpoint class as `versionedWrite` reads, checks and records it. */
export function endpointClassEntity(name: string): VersionedEntity<EndpointClassRecord> {
  return {
    find: (tx) => findEndpointClass(tx, name),
    entityType: "endpoint-class",
    entityId: name,
    label: endpointClassLabel(name),
    view: auditView,
  };
}

/** Refuses an endpoint class that does not exist, at the `endpointClass` field. */
export async function requireEndpointClass(db: Db, name: string | null): Promise<void> {
  if (name === null) return;
  const found = await db.endpointClass.findUnique({ where: { name }, select: { name: true } });
  if (found === null) {
    throw validationError([
      { path: "endpointClass", message: `there is no endpoint class "${name}"` },
    ]);
  }
}
