/**
 * An import prepared in the child process (a body past its first MiB, through
 * `readPolicyDocument`) stores exactly what the same document imported with `importPolicy`
 * stores, and what its compiled entries and canonical export say it should: the registry, the
 * overrides, the entry set and its checksum, the audit entry's summary. A second import keeps
 * what did not change, updates what did (version + 1) and deletes what it leaves out.
 */
import {
  canonicalPolicy,
  compileEntries,
  entrySetChecksum,
  parsePolicyDocument,
  type TPolicyDocument,
  type TPolicyDocumentInput,
} from "@limitplane/enforcer/policy";
import { describe, expect, it } from "vitest";
import { readPolicyDocument } from "@/lib/api/read-policy-document";
import { toEntryRow } from "@/lib/control/policy/entry-row";
import { exportPolicy } from "@/lib/control/policy/export-policy";
import { importPolicy, importPreparedPolicy } from "@/lib/control/policy/import-policy";
import { summarizeDocument } from "@/lib/control/policy/summarize-document";
import type { PrismaClient } from "@/lib/generated/prisma/client";
import { examplePolicyForSeed } from "../../scripts/seed";
import {
  countEverything,
  depsFor,
  latestAuditEntries,
  operatorContext,
} from "./helpers/policy-fixtures";
import { provideTestDatabase } from "./helpers/test-database";

const onTheSpot = provideTestDatabase();
const inChildProcess = provideTestDatabase();

/** One clock for both databases, so that both compile the same incidents at the same time. */
const NOW_MS = Date.now();

/** Customers, and overrides for every third of them: well past a MiB, several chunks of each. */
const CUSTOMERS = 16_000;

function largeDocument(
  change: (customers: number[]) => number[] = (all) => all,
  renamed = new Set<number>(),
) {
  const input: TPolicyDocumentInput = examplePolicyForSeed(NOW_MS);
  const kept = change(Array.from({ length: CUSTOMERS }, (_, index) => index));
  // Listed backwards: the import sorts them.
  for (const index of [...kept].reverse()) {
    const id = `bulk-${String(index).padStart(6, "0")}`;
    input.customers?.push({
      id,
      displayName: `${renamed.has(index) ? "Renamed" : "Bulk"} customer ${index}`,
      tier: index % 2 === 0 ? "free" : "pro",
    });
    if (index % 3 === 0) {
      input.customerOverrides?.push({
        customerId: id,
        endpointClass: index % 2 === 0 ? "reports" : null,
        limit: {
          algorithm: "token-bucket",
          capacity: renamed.has(index) ? 400 : 300,
          refillPerSec: 15,
        },
      });
    }
  }
  return input;
}

function parsed(input: TPolicyDocumentInput): TPolicyDocument {
  const result = parsePolicyDocument(input);
  if (!result.ok) throw new Error(`fixture invalid: ${JSON.stringify(result.errors[0])}`);
  return result.value;
}

/** Imports `input` as the API does: its body read, validated and prepared in the child process. */
async function importThroughChildProcess(
  db: PrismaClient,
  input: TPolicyDocumentInput,
  reason: string,
) {
  const text = JSON.stringify(input);
  expect(Buffer.byteLength(text)).toBeGreaterThan(1024 * 1024);
  const request = new Request("http://test.local/api/v1/policy/import", {
    method: "POST",
    body: text,
    headers: { "content-type": "application/json" },
  });
  const read = await readPolicyDocument(request, { maxBytes: 64 * 1024 * 1024 });
  return importPreparedPolicy(
    read,
    operatorContext(reason),
    depsFor(db, () => NOW_MS),
  );
}

/** Everything an import writes that a reader sees, in a stable order. */
async function storedPolicy(db: PrismaClient) {
  return {
    customers: await db.customer.findMany({
      orderBy: { id: "asc" },
      select: { id: true, displayName: true, tier: true, version: true },
    }),
    overrides: await db.customerOverride.findMany({
      orderBy: { scope: "asc" },
      select: { scope: true, customerId: true, endpointClass: true, limit: true, version: true },
    }),
    entries: await db.policyEntry.findMany({
      orderBy: { key: "asc" },
      select: {
        key: true,
        kind: true,
        customerId: true,
        value: true,
        digest: true,
        expiresAt: true,
      },
    }),
    version: await db.policyVersion.findFirst({
      orderBy: { version: "desc" },
      select: { version: true, checksum: true, entries: true, changes: true },
    }),
    document: (
      await exportPolicy(
        {},
        depsFor(db, () => NOW_MS),
      )
    ).document,
  };
}

/** What `doc` compiles to at NOW_MS, as the entry rows are stored. */
function compiledRows(doc: TPolicyDocument) {
  return compileEntries(doc, NOW_MS)
    .map(toEntryRow)
    .map(({ key, kind, customerId, value, digest, expiresAt }) => ({
      key,
      kind,
      customerId,
      value,
      digest,
      expiresAt,
    }))
    .sort((a, b) => (a.key < b.key ? -1 : 1));
}

describe("an import prepared in the child process", () => {
  it("stores what importPolicy stores for the same document, as its compiled entries say", async () => {
    const input = largeDocument();
    const doc = parsed(input);
    const spot = await importPolicy(
      input,
      operatorContext("on the spot"),
      depsFor(onTheSpot.current().db, () => NOW_MS),
    );
    const childProcess = await importThroughChildProcess(
      inChildProcess.current().db,
      input,
      "in the child process",
    );

    expect(childProcess.summary).toEqual(spot.summary);
    expect(childProcess.summary).toEqual(summarizeDocument(doc));
    const stored = await storedPolicy(inChildProcess.current().db);
    expect(stored).toEqual(await storedPolicy(onTheSpot.current().db));
    expect(stored.customers).toHaveLength(CUSTOMERS + 4);
    expect(stored.overrides).toHaveLength(Math.ceil(CUSTOMERS / 3) + 1);
    expect(stored.entries).toEqual(compiledRows(doc));
    expect(stored.version).toMatchObject({
      version: 1,
      checksum: entrySetChecksum(compileEntries(doc, NOW_MS)),
      entries: stored.entries.length,
    });
    expect(stored.document).toBe(canonicalPolicy(doc));
    const [audit] = await latestAuditEntries(inChildProcess.current().db);
    expect(audit).toMatchObject({
      action: "policy.import",
      reason: "in the child process",
      policyVersion: 1,
    });
    expect(audit?.after).toEqual(summarizeDocument(doc));
  });

  it("keeps what did not change, updates what did and deletes what the document leaves out", async () => {
    const { db } = inChildProcess.current();
    const renamed = new Set(Array.from({ length: 900 }, (_, index) => 1_000 + index));
    // The first 1,000 customers dropped (with their overrides), 900 renamed, 300 new.
    const input = largeDocument(
      (all) => [
        ...all.slice(1_000),
        ...Array.from({ length: 300 }, (_, index) => CUSTOMERS + index),
      ],
      renamed,
    );
    const doc = parsed(input);
    const before = await countEverything(db);
    const result = await importThroughChildProcess(db, input, "second");

    expect(result).toMatchObject({ policyVersion: 2 });
    expect("isNoChange" in result).toBe(false);
    const stored = await storedPolicy(db);
    expect(stored.customers.map((customer) => customer.id)).toEqual(
      [...doc.customers.map((customer) => customer.id)].sort(),
    );
    const versionOf = (index: number) =>
      stored.customers.find((customer) => customer.id === `bulk-${String(index).padStart(6, "0")}`)
        ?.version;
    expect([
      versionOf(0),
      versionOf(1_000),
      versionOf(1_899),
      versionOf(1_900),
      versionOf(CUSTOMERS),
    ]).toEqual([undefined, 2, 2, 1, 1]);
    const renamedOverrides = stored.overrides.filter((override) => override.version === 2);
    expect(renamedOverrides).toHaveLength([...renamed].filter((index) => index % 3 === 0).length);
    expect(stored.overrides).toHaveLength(doc.customerOverrides.length);
    expect(stored.entries).toEqual(compiledRows(doc));
    expect(stored.version?.checksum).toBe(entrySetChecksum(compileEntries(doc, NOW_MS)));
    expect(stored.document).toBe(canonicalPolicy(doc));
    const after = await countEverything(db);
    expect(after.audit).toBe((before.audit ?? 0) + 1);
    expect(after.versions).toBe(2);
    const [audit] = await latestAuditEntries(db);
    expect(audit?.after).toEqual(summarizeDocument(doc));
    expect(audit?.before).toMatchObject({ customers: CUSTOMERS + 4 });
  });

  it("writes nothing when the same document comes again", async () => {
    const { db } = inChildProcess.current();
    const before = await countEverything(db);
    const input = largeDocument(
      (all) => [
        ...all.slice(1_000),
        ...Array.from({ length: 300 }, (_, index) => CUSTOMERS + index),
      ],
      new Set(Array.from({ length: 900 }, (_, index) => 1_000 + index)),
    );
    const result = await importThroughChildProcess(db, input, "again");
    expect(result).toMatchObject({ isNoChange: true, auditEntryId: null });
    expect(await countEverything(db)).toEqual(before);
  });
});
