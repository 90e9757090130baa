/**
 * Deterministic serialisation. Two uses:
 *
 * - {@link canonicalJson}: the bytes a snapshot checksum is computed over. Compact JSON with object
 *   keys in ascending UTF-16 code unit order at every depth, arrays in their given order, numbers
 *   as ECMAScript prints them. Keys are sorted by the serialiser itself, not by JavaScript's object
 *   order (which puts integer-like keys first), so another language can reproduce it.
 * - {@link canonicalPolicy}: a policy export. Every collection in a fixed order, every object's
 *   keys in a fixed order (identity first, then alphabetical), two-space indentation, one entity
 *   per block, a final newline. Two exports of the same policy are byte-identical, and a diff
 *   between two exports shows only what changed.
 *
 * Sorting compares code units (`<`), never `localeCompare`, whose result depends on the locale.
 */
import type { TCustomer, TCustomerOverride, TPolicyDocument } from "./schemas";

/** Ascending code unit order. */
export function compareCodeUnits(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * Canonical compact JSON of a JSON value. Throws on what JSON cannot represent faithfully
 * (non-finite numbers, `undefined`, functions, symbols, bigints), rather than writing `null`.
 */
export function canonicalJson(value: unknown): string {
  return serialize(value, compareCodeUnits, null, "");
}

/** Keys an export lists first, in this order, so each block starts with what identifies it. */
const LEADING_KEYS = [
  "schemaVersion",
  "id",
  "name",
  "customerId",
  "endpointClass",
  "target",
  "algorithm",
  "method",
];

function compareExportKeys(a: string, b: string): number {
  const rankA = LEADING_KEYS.indexOf(a);
  const rankB = LEADING_KEYS.indexOf(b);
  if (rankA !== rankB) {
    if (rankA === -1) return 1;
    if (rankB === -1) return -1;
    return rankA - rankB;
  }
  return compareCodeUnits(a, b);
}

function serialize(
  value: unknown,
  compareKeys: (a: string, b: string) => number,
  indent: string | null,
  depth: string,
): string {
  if (value === null || typeof value === "boolean" || typeof value === "string") {
    return JSON.stringify(value);
  }
  if (typeof value === "number") {
    if (!Number.isFinite(value))
      throw new TypeError(`cannot serialise the number ${value} as JSON`);
    return JSON.stringify(value);
  }
  const inner = indent === null ? "" : depth + indent;
  const open = indent === null ? "" : `\n${inner}`;
  const close = indent === null ? "" : `\n${depth}`;
  const separator = indent === null ? "," : `,\n${inner}`;
  const colon = indent === null ? ":" : ": ";
  if (Array.isArray(value)) {
    if (value.length === 0) return "[]";
    const items = value.map((item: unknown) => serialize(item, compareKeys, indent, inner));
    return `[${open}${items.join(separator)}${close}]`;
  }
  if (typeof value === "object") {
    const record = value as Record<string, unknown>;
    const keys = Object.keys(record).sort(compareKeys);
    if (keys.length === 0) return "{}";
    const members = keys.map((key) => {
      const member = record[key];
      if (member === undefined)
        throw new TypeError(`cannot serialise undefined at key ${JSON.stringify(key)}`);
      return JSON.stringify(key) + colon + serialize(member, compareKeys, indent, inner);
    });
    return `{${open}${members.join(separator)}${close}}`;
  }
  throw new TypeError(`cannot serialise a ${typeof value} as JSON`);
}

/** A comparator by `keys` in turn, each in code unit order. */
export const byKey =
  <T>(...keys: ((item: T) => string)[]) =>
  (a: T, b: T): number => {
    for (const key of keys) {
      const order = compareCodeUnits(key(a), key(b));
      if (order !== 0) return order;
    }
    return 0;
  };

/**
 * The document with every collection in canonical order: tiers, endpoint classes, customers and
 * candidates by name or id; each class's match rules by path then method; customer overrides by
 * customer then endpoint class (all-endpoints first); incident overrides by customer, endpoint
 * class, start, then id. Reordering never changes what a policy means: match order depends on the
 * patterns alone (see `endpoint-matcher.ts`).
 */
export function sortPolicyDocument(doc: TPolicyDocument): TPolicyDocument {
  return {
    ...doc,
    tiers: [...doc.tiers].sort(byKey((tier) => tier.name)),
    endpointClasses: [...doc.endpointClasses]
      .sort(byKey((endpointClass) => endpointClass.name))
      .map((endpointClass) => ({
        ...endpointClass,
        match: [...endpointClass.match].sort(
          byKey(
            (rule) => rule.path,
            (rule) => rule.method,
          ),
        ),
      })),
    customers: [...doc.customers].sort(byKey((customer) => customer.id)),
    customerOverrides: [...doc.customerOverrides].sort(
      byKey(
        (override) => override.customerId,
        (override) => override.endpointClass ?? "",
      ),
    ),
    incidentOverrides: [...doc.incidentOverrides].sort(
      byKey(
        (incident) => incident.customerId,
        (incident) => incident.endpointClass ?? "",
        (incident) => incident.startsAt,
        (incident) => incident.id,
      ),
    ),
    dryRunCandidates: [...doc.dryRunCandidates].sort(byKey((candidate) => candidate.id)),
    ...(doc.descriptorRules === undefined
      ? {}
      : { descriptorRules: [...doc.descriptorRules].sort(byKey((rule) => rule.id)) }),
    ...(doc.descriptorMappings === undefined
      ? {}
      : {
          descriptorMappings: [...doc.descriptorMappings].sort(byKey((mapping) => mapping.domain)),
        }),
    ...(doc.outboundBudgets === undefined
      ? {}
      : { outboundBudgets: [...doc.outboundBudgets].sort(byKey((budget) => budget.name)) }),
  };
}

/**
 * The canonical export of a parsed policy document (defaults filled in, so every mode and failure
 * policy is written out). Stable: equal documents give byte-identical text whatever the order
 * their collections and keys were built in.
 */
export function canonicalPolicy(doc: TPolicyDocument): string {
  return `${serialize(sortPolicyDocument(doc), compareExportKeys, "  ", "")}\n`;
}

/** The large collections of a policy, as pages already in canonical order. */
export interface CanonicalPolicyParts {
  /** Everything else: tiers, classes, settings, incidents, candidates (any order). */
  readonly document: Omit<TPolicyDocument, "customers" | "customerOverrides">;
  /** Customers by id, in code unit order. */
  readonly customers: AsyncIterable<readonly TCustomer[]>;
  /** Overrides by customer id, then endpoint class (all endpoints first), in code unit order. */
  readonly customerOverrides: AsyncIterable<readonly TCustomerOverride[]>;
}

/**
 * Writes the canonical export piece by piece, never holding the large collections at once: the
 * same bytes as {@link canonicalPolicy} of the whole document. `write` is awaited per chunk.
 */
export async function writeCanonicalPolicy(
  parts: CanonicalPolicyParts,
  write: (chunk: string) => unknown,
): Promise<void> {
  const small = sortPolicyDocument({ ...parts.document, customers: [], customerOverrides: [] });
  const keys = Object.keys(small).sort(compareExportKeys);
  const indent = "  ";
  const itemDepth = indent + indent;
  await write("{");
  for (const [index, key] of keys.entries()) {
    await write(`${index === 0 ? "\n" : ",\n"}${indent}${JSON.stringify(key)}: `);
    const pages =
      key === "customers"
        ? parts.customers
        : key === "customerOverrides"
          ? parts.customerOverrides
          : null;
    if (pages === null) {
      await write(serialize(small[key as keyof typeof small], compareExportKeys, indent, indent));
      continue;
    }
    let isFirst = true;
    for await (const page of pages) {
      for (const item of page) {
        await write(
          `${isFirst ? "[\n" : ",\n"}${itemDepth}${serialize(item, compareExportKeys, indent, itemDepth)}`,
        );
        isFirst = false;
      }
    }
    await write(isFirst ? "[]" : `\n${indent}]`);
  }
  await write("\n}\n");
}
