import example from "@limitplane/enforcer/example-policy.json";
import {
  compileEntries,
  entrySetChecksum,
  parsePolicyDocument,
  sortPolicyDocument,
  type TPolicyDocument,
} from "@limitplane/enforcer/policy";
import { describe, expect, it } from "vitest";
import { entryRowBytes, toEntryRow } from "./entry-row";
import { entriesAt, PREPARED_CHUNK_ROWS, prepareImport } from "./prepare-import";
import { summarizeDocument } from "./summarize-document";

const CUSTOMERS = 2 * PREPARED_CHUNK_ROWS + 4;

/**
 * The example with many customers in reverse order, a second override and a second incident
 * listed before the first, so that every collection needs sorting.
 */
function unsortedDocument(): TPolicyDocument {
  const customers = Array.from({ length: CUSTOMERS }, (_, index) => ({
    id: `bulk-${String(CUSTOMERS - index).padStart(6, "0")}`,
    displayName: `Bulk customer ${index}`,
    tier: "free",
  }));
  const [incident] = example.incidentOverrides;
  if (incident === undefined) throw new Error("the example policy has no incident");
  const parsed = parsePolicyDocument({
    ...example,
    customers: [...customers, ...example.customers],
    customerOverrides: [
      {
        customerId: "initech",
        endpointClass: null,
        limit: { algorithm: "token-bucket", capacity: 50, refillPerSec: 5 },
      },
      ...example.customerOverrides,
    ],
    incidentOverrides: [
      {
        ...incident,
        id: "inc-later",
        customerId: "globex",
        startsAt: "2025-06-03T09:00:00Z",
        expiresAt: "2025-06-04T09:00:00Z",
      },
      incident,
    ],
  });
  if (!parsed.ok) throw new Error(`fixture invalid: ${JSON.stringify(parsed.errors[0])}`);
  return parsed.value;
}

const doc = unsortedDocument();
const prepared = prepareImport(doc);

/** The rows of chunks of JSON rows. */
function rowsOf<Row>(chunks: readonly string[]): Row[] {
  return chunks.flatMap((chunk) => JSON.parse(chunk) as Row[]);
}

const byKey = (a: { key: string }, b: { key: string }) => (a.key < b.key ? -1 : 1);

describe("prepareImport", () => {
  it("writes every customer once, in canonical order, at most PREPARED_CHUNK_ROWS a chunk", () => {
    expect(prepared.customerChunks.map((chunk) => (JSON.parse(chunk) as unknown[]).length)).toEqual(
      [
        PREPARED_CHUNK_ROWS,
        PREPARED_CHUNK_ROWS,
        CUSTOMERS + example.customers.length - 2 * PREPARED_CHUNK_ROWS,
      ],
    );
    expect(rowsOf(prepared.customerChunks)).toEqual(sortPolicyDocument(doc).customers);
    expect(prepared.customerCount).toBe(CUSTOMERS + example.customers.length);
  });

  it("keeps the rest of the document in canonical order, without its customers", () => {
    const { customers: _customers, ...sorted } = sortPolicyDocument(doc);
    expect(prepared.document).toEqual(sorted);
    expect(prepared.document.customerOverrides.map((override) => override.customerId)).toEqual([
      "globex",
      "initech",
    ]);
  });

  it("keeps the incidents and candidates in the document's own order, for the positions errors name", () => {
    expect(prepared.asWritten.incidentOverrides.map((incident) => incident.id)).toEqual([
      "inc-later",
      "inc-2025-06-02-acme",
    ]);
    expect(prepared.asWritten.dryRunCandidates).toEqual(doc.dryRunCandidates);
  });

  it("summarizes the document as summarizeDocument does", () => {
    expect(prepared.summary).toEqual(summarizeDocument(doc));
  });

  it.each([
    ["before every incident starts", "2025-06-01T00:00:00Z", 2],
    ["while both incidents run", "2025-06-02T10:00:00Z", 2],
    ["once the first incident has expired", "2025-06-03T00:00:00Z", 1],
    ["at the second incident's expiry, when it has expired", "2025-06-04T09:00:00Z", 0],
  ])("holds the entries compileEntries compiles %s", (_label, at, incidents) => {
    const nowMs = Date.parse(at);
    const compiled = compileEntries(doc, nowMs).map(toEntryRow);
    const entries = entriesAt(prepared, nowMs);
    expect(compiled.filter((row) => row.kind === "incident")).toHaveLength(incidents);
    // As the statements read them: the rows as JSON, expiry times as ISO text.
    expect(rowsOf<{ key: string }>(entries.chunks).sort(byKey)).toEqual(
      (JSON.parse(JSON.stringify(compiled)) as { key: string }[]).sort(byKey),
    );
    expect(entries.count).toBe(compiled.length);
    expect(entries.checksum).toBe(entrySetChecksum(compileEntries(doc, nowMs)));
    expect(entries.bytes).toBe(compiled.reduce((sum, row) => sum + entryRowBytes(row), 0));
  });
});
