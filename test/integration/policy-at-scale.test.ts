/**
 * The policy at scale, in Postgres: an import larger than one statement's parameter limit, the
 * canonical export round trip at 10,000 overrides, concurrent changes from several processes
 * giving consecutive versions whose deltas chain, a change that costs what it changes however
 * large the policy, and the cost rule enforced against overrides without reading them all.
 */
import { spawn } from "node:child_process";
import { once } from "node:events";
import { fileURLToPath } from "node:url";
import {
  EntrySetSum,
  entryDigestHex,
  parsePolicyDelta,
  type TPolicyDocumentInput,
} from "@limitplane/enforcer/policy";
import { beforeAll, describe, expect, it } from "vitest";
import { updateEndpointClass } from "@/lib/control/endpoint-class/update-endpoint-class";
import { raiseIncident } from "@/lib/control/incident/raise-incident";
import { exportPolicy } from "@/lib/control/policy/export-policy";
import { importPolicy } from "@/lib/control/policy/import-policy";
import type { PrismaClient } from "@/lib/generated/prisma/client";
import { examplePolicyForSeed } from "../../scripts/seed";
import {
  countEverything,
  depsFor,
  expectRefusedWithoutWrites,
  latestSnapshot,
  operatorContext,
} from "./helpers/policy-fixtures";
import { provideTestDatabase } from "./helpers/test-database";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const large = provideTestDatabase();
const copy = provideTestDatabase();
const small = provideTestDatabase();

/** The example policy plus `count` customers, each with an account override. */
function withOverrides(count: number, nowMs: number): TPolicyDocumentInput {
  const doc = examplePolicyForSeed(nowMs) as TPolicyDocumentInput;
  const id = (index: number) => `bulk-${String(index).padStart(7, "0")}`;
  return {
    ...doc,
    customers: [
      ...(doc.customers ?? []),
      ...Array.from({ length: count }, (_, index) => ({
        id: id(index),
        displayName: `Bulk customer ${index}`,
        tier: index % 2 === 0 ? "pro" : "free",
      })),
    ],
    customerOverrides: [
      ...(doc.customerOverrides ?? []),
      ...Array.from({ length: count }, (_, index) => ({
        customerId: id(index),
        endpointClass: index % 3 === 0 ? "search" : null,
        limit: {
          algorithm: "token-bucket" as const,
          capacity: 100 + (index % 50),
          refillPerSec: 20,
        },
      })),
    ],
  };
}

/** The stored entries' digests, summed: what the version's checksum must be. */
async function storedChecksum(db: PrismaClient): Promise<{ checksum: string; entries: number }> {
  const sum = new EntrySetSum();
  let entries = 0;
  let after = "";
  for (;;) {
    const rows = await db.policyEntry.findMany({
      where: { key: { gt: after } },
      orderBy: { key: "asc" },
      take: 5_000,
      select: { key: true, value: true, digest: true },
    });
    if (rows.length === 0) break;
    for (const row of rows) {
      expect(row.digest).toBe(entryDigestHex(row.key, row.value));
      sum.add(row.digest);
    }
    entries += rows.length;
    after = rows.at(-1)?.key ?? after;
  }
  return { checksum: sum.hex, entries };
}

describe("an import of 40,000 overrides", () => {
  beforeAll(async () => {
    const deps = depsFor(large.current().db);
    const phases: string[] = [];
    const result = await importPolicy(
      withOverrides(40_000, deps.clock.nowMs()),
      operatorContext("bulk load"),
      deps,
      { onProgress: (progress) => phases.push(progress.phase) },
    );
    expect(result.policyVersion).toBe(1);
    expect("isNoChange" in result).toBe(false);
    expect([...new Set(phases)]).toEqual([
      "validated",
      "customers",
      "overrides",
      "entries",
      "written",
    ]);
  }, 180_000);

  it("is written whole, although one row per parameter would have needed over 32,767 parameters", async () => {
    const { db } = large.current();
    const example = examplePolicyForSeed(Date.now()) as TPolicyDocumentInput;
    expect(await db.customerOverride.count()).toBe(
      40_000 + (example.customerOverrides?.length ?? 0),
    );
    const version = await db.policyVersion.findFirstOrThrow({ orderBy: { version: "desc" } });
    // 40,000 overrides and more: too many for one delta, so version 1 goes out as a snapshot.
    expect(version).toMatchObject({ version: 1, delta: null, changes: expect.any(Number) });
    expect(await storedChecksum(db)).toEqual({
      checksum: version.checksum,
      entries: version.entries,
    });
    expect(await db.auditEntry.count({ where: { action: "policy.import" } })).toBe(1);
  });

  it("a raise then costs what it changes: one entry in its delta, a few hundred bytes", async () => {
    const { db } = large.current();
    const before = await db.policyVersion.findFirstOrThrow({ orderBy: { version: "desc" } });
    const { incident, policyVersion } = await raiseIncident(
      { customerId: "bulk-0000042", factor: 2, durationMs: 3_600_000 },
      operatorContext("incident at scale"),
      depsFor(db),
    );
    expect(policyVersion).toBe(before.version + 1);
    const version = await db.policyVersion.findUniqueOrThrow({
      where: { version: policyVersion ?? -1 },
    });
    expect(version).toMatchObject({ changes: 1, baseChecksum: before.checksum });
    expect(version.deltaBytes).toBeLessThan(1_000);
    const delta = parsePolicyDelta(version.delta);
    expect(delta.ok && delta.value.changes.map((change) => change.key)).toEqual([
      `incident:${incident.id}`,
    ]);
    expect((await storedChecksum(db)).checksum).toBe(version.checksum);
  });

  it("raising an endpoint class's cost above an override's size is refused, naming the override", async () => {
    const { db } = large.current();
    const search = await db.endpointClass.findUniqueOrThrow({ where: { name: "search" } });
    const error = await expectRefusedWithoutWrites(db, () =>
      updateEndpointClass(
        { name: "search", expectedVersion: search.version, cost: 120 },
        operatorContext("make search dearer"),
        depsFor(db),
      ),
    );
    expect(error.code).toBe("VALIDATION_FAILED");
    expect(error.fieldErrors).toContainEqual({
      path: 'customerOverrides["customer:bulk-0000000/endpoint:search"].limit.capacity',
      message:
        'customer override "customer:bulk-0000000/endpoint:search": capacity 100 is less than the 120 units one request to endpoint class "search" costs: no such request could ever be admitted',
    });
  });
});

beforeAll(async () => {
  const source = depsFor(small.current().db);
  await importPolicy(withOverrides(10_000, source.clock.nowMs()), operatorContext("load"), source);
}, 120_000);

describe("export, import, export at 10,000 overrides", () => {
  it("is byte-identical, and importing it again writes nothing", async () => {
    const source = depsFor(small.current().db);
    const first = await exportPolicy({}, source);
    const target = depsFor(copy.current().db);
    await importPolicy(JSON.parse(first.document), operatorContext("copy"), target);
    const second = await exportPolicy({}, target);
    expect(second.document).toBe(first.document);
    expect(second.document.length).toBeGreaterThan(2_000_000);
    // The two databases hold the same compiled set.
    expect((await storedChecksum(copy.current().db)).checksum).toBe(
      (await storedChecksum(small.current().db)).checksum,
    );
    const before = await countEverything(copy.current().db);
    const again = await importPolicy(JSON.parse(second.document), operatorContext("again"), target);
    expect(again).toMatchObject({ isNoChange: true, auditEntryId: null, policyVersion: null });
    expect(await countEverything(copy.current().db)).toEqual(before);
  }, 120_000);
});

/** Runs `change-process.ts` for `customerIds`; resolves with its printed results. */
async function changesFromAnotherProcess(
  databaseUrl: string,
  customerIds: readonly string[],
): Promise<{ customerId: string; policyVersion: number }[]> {
  const child = spawn(
    process.execPath,
    [
      "--conditions=react-server",
      "--import",
      "tsx",
      "test/integration/helpers/change-process.ts",
      databaseUrl,
      ...customerIds,
    ],
    { cwd: ROOT, env: process.env, stdio: ["ignore", "pipe", "pipe"] },
  );
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const [code] = await once(child, "exit");
  if (code !== 0) throw new Error(`change process exited with ${code}: ${stderr}`);
  return stdout
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line) as { customerId: string; policyVersion: number });
}

describe("20 concurrent changes from 4 processes", () => {
  it("give 20 consecutive versions, each delta based on the one before, and lose none", async () => {
    const { db, url } = small.current();
    const customers = Array.from(
      { length: 20 },
      (_, index) => `bulk-${String(index + 100).padStart(7, "0")}`,
    );
    // They hold search overrides or none; the race adds an account override to each.
    await db.customerOverride.deleteMany({
      where: { customerId: { in: customers }, endpointClass: null },
    });
    const start = await db.policyVersion.findFirstOrThrow({ orderBy: { version: "desc" } });
    const results = (
      await Promise.all(
        [0, 1, 2, 3].map((process) =>
          changesFromAnotherProcess(url, customers.slice(process * 5, process * 5 + 5)),
        ),
      )
    ).flat();
    expect(results.map((result) => result.policyVersion).sort((a, b) => a - b)).toEqual(
      Array.from({ length: 20 }, (_, index) => start.version + 1 + index),
    );
    const versions = await db.policyVersion.findMany({
      where: { version: { gt: start.version } },
      orderBy: { version: "asc" },
      select: { version: true, baseChecksum: true, checksum: true, delta: true },
    });
    let checksum = start.checksum;
    const changedKeys: string[] = [];
    for (const version of versions) {
      expect(version.baseChecksum).toBe(checksum);
      const delta = parsePolicyDelta(version.delta);
      if (!delta.ok) throw new Error(`version ${version.version}: ${JSON.stringify(delta.errors)}`);
      expect(delta.value).toMatchObject({ version: version.version, base: version.version - 1 });
      changedKeys.push(...delta.value.changes.map((change) => change.key));
      checksum = version.checksum;
    }
    expect(changedKeys.sort()).toEqual(customers.map((customer) => `customer:${customer}`).sort());
    // Every change is in the final set, which is exactly what the last version says.
    const snapshot = await latestSnapshot(db);
    for (const customer of customers) {
      expect(snapshot.policy.customerOverrides).toContainEqual(
        expect.objectContaining({ customerId: customer, endpointClass: null }),
      );
    }
    expect((await storedChecksum(db)).checksum).toBe(checksum);
  }, 120_000);
});
