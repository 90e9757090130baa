/**
 * The CPU-heavy half of an import, done before its transaction: the document sorted into
 * canonical order, compiled into entries and hashed, summarized, and its customers and entries
 * written as the JSON text the import's statements read (`json_to_recordset`), at most
 * `PREPARED_CHUNK_ROWS` rows a statement. A large body is prepared in the child process that
 * validated it (lib/api/policy-document-process.ts), so the seconds a million rows take are spent
 * off the server's event loop, and the transaction then only hands prepared text to Postgres, one
 * chunk a statement. Every other caller prepares on the spot, with this same function.
 *
 * Pure but for Node's SHA-256: it imports nothing that opens a connection (a child process loads
 * it).
 */
import {
  compileEntries,
  EntrySetSum,
  sortPolicyDocument,
  type TPolicyDocument,
} from "@limitplane/enforcer/policy";
import { type EntryRow, entryRowBytes, toEntryRow } from "./entry-row";
import type { PolicySummary } from "./policy-summary";
import { summarizeDocument } from "./summarize-document";

/**
 * Rows per chunk of prepared text: each chunk is one statement, a few hundred KiB, written while
 * other requests are served in between.
 */
export const PREPARED_CHUNK_ROWS = 5_000;

/** A document as an import writes it: everything but its customers, which are chunks of text. */
export type PreparedDocument = Omit<TPolicyDocument, "customers">;

/** A whole entry set ready to stage: chunks of rows as JSON, and what they add up to. */
export interface PreparedEntries {
  /** JSON arrays of entry rows (`EntryRow`, `expiresAt` as ISO text). */
  readonly chunks: readonly string[];
  readonly count: number;
  /** The set's checksum (`EntrySetSum`). */
  readonly checksum: string;
  /** Bytes of the entries' keys and values. */
  readonly bytes: number;
}

export interface PreparedImport {
  /** The document in canonical order (`sortPolicyDocument`), its customers left out. */
  readonly document: PreparedDocument;
  /**
   * The collections whose problems are reported by position, in the document's own order (the
   * positions a person can find in the file).
   */
  readonly asWritten: Pick<TPolicyDocument, "incidentOverrides" | "dryRunCandidates">;
  readonly customerCount: number;
  /** The customers in canonical order, as JSON arrays of `{ id, displayName, tier }`. */
  readonly customerChunks: readonly string[];
  /** Every entry but the incidents'. */
  readonly entries: PreparedEntries;
  /**
   * The incidents' entries, each staged only when it has not expired by the time the import is
   * written (`entriesAt`), as `compileEntries` leaves expired incidents out.
   */
  readonly incidentEntries: readonly EntryRow[];
  /** The summary of the document: the import's audit entry's `after`. */
  readonly summary: PolicySummary;
}

/** Splits `items` into JSON arrays of at most `PREPARED_CHUNK_ROWS` of `row(item)` each. */
function jsonChunks<Item>(items: readonly Item[], row: (item: Item) => unknown): string[] {
  const chunks: string[] = [];
  for (let start = 0; start < items.length; start += PREPARED_CHUNK_ROWS) {
    chunks.push(JSON.stringify(items.slice(start, start + PREPARED_CHUNK_ROWS).map(row)));
  }
  return chunks;
}

/** Prepares a validated document for `importPreparedPolicy` (import-policy.ts). */
export function prepareImport(doc: TPolicyDocument): PreparedImport {
  const sorted = sortPolicyDocument(doc);
  const { customers, ...document } = sorted;
  // Every incident compiled; which of them are still current is decided when the import is
  // written, by the transaction's clock.
  const rows = compileEntries(sorted, Number.NEGATIVE_INFINITY).map(toEntryRow);
  const incidentEntries = rows.filter((row) => row.kind === "incident");
  const others = rows.filter((row) => row.kind !== "incident");
  const sum = new EntrySetSum();
  let bytes = 0;
  for (const row of others) {
    sum.add(row.digest);
    bytes += entryRowBytes(row);
  }
  return {
    document,
    asWritten: {
      incidentOverrides: doc.incidentOverrides,
      dryRunCandidates: doc.dryRunCandidates,
    },
    customerCount: customers.length,
    customerChunks: jsonChunks(customers, (customer) => ({
      id: customer.id,
      displayName: customer.displayName,
      tier: customer.tier,
    })),
    entries: {
      chunks: jsonChunks(others, (row) => row),
      count: others.length,
      checksum: sum.hex,
      bytes,
    },
    incidentEntries,
    summary: summarizeDocument(sorted),
  };
}

/**
 * The prepared entry set as compiled at `nowMs`: the incidents that have expired by then left
 * out, as `compileEntries(doc, nowMs)` leaves them out.
 */
export function entriesAt(prepared: PreparedImport, nowMs: number): PreparedEntries {
  const current = prepared.incidentEntries.filter(
    (row) => row.expiresAt === null || row.expiresAt.getTime() > nowMs,
  );
  if (current.length === 0) return prepared.entries;
  const sum = new EntrySetSum(prepared.entries.checksum);
  let bytes = prepared.entries.bytes;
  for (const row of current) {
    sum.add(row.digest);
    bytes += entryRowBytes(row);
  }
  return {
    chunks: [...prepared.entries.chunks, ...jsonChunks(current, (row) => row)],
    count: prepared.entries.count + current.length,
    checksum: sum.hex,
    bytes,
  };
}
