/**
 * A compiled entry as Postgres stores it (`PolicyEntry`, and the staging table of an import):
 * its canonical text and that text's digest. Pure but for Node's SHA-256; it imports nothing that
 * opens a connection, so the import's child process (lib/api/policy-document-process.ts) compiles
 * entries with it too.
 */
import { createHash } from "node:crypto";
import {
  type EntryKind,
  entryCustomerId,
  entryDigestHex,
  entryExpiresAtMs,
  entryText,
  type PolicyEntry,
} from "@limitplane/enforcer/policy";

/** An entry as it will be stored. */
export interface EntryRow {
  readonly key: string;
  readonly kind: EntryKind;
  readonly customerId: string | null;
  readonly value: string;
  readonly digest: string;
  readonly expiresAt: Date | null;
}

/** Node's SHA-256: the digests the portable one gives, faster for a million entries. */
const nodeSha256Hex = (text: string) => createHash("sha256").update(text).digest("hex");

export function toEntryRow(entry: PolicyEntry): EntryRow {
  const value = entryText(entry);
  const expiresAtMs = entryExpiresAtMs(entry);
  return {
    key: entry.key,
    kind: entry.kind,
    customerId: entryCustomerId(entry),
    value,
    digest: entryDigestHex(entry.key, value, nodeSha256Hex),
    expiresAt: expiresAtMs === null ? null : new Date(expiresAtMs),
  };
}

/** The bytes an entry adds to a whole set's size (its key and its value, UTF-8). */
export function entryRowBytes(row: EntryRow): number {
  return Buffer.byteLength(row.key) + Buffer.byteLength(row.value);
}
