/**
 * The audit log's hash chain: concurrent writers under different locks still make one unbroken
 * chain, and a forged, altered, deleted or unchained row is each named by the verification, as
 * `npm run audit:verify` and GET /api/v1/audit/verification report it.
 *
 * Tampering needs what the application cannot do: the owner's connection with triggers off
 * (`session_replication_role = replica`, superuser only). Each test puts the row back.
 */
import { spawn } from "node:child_process";
import path from "node:path";
import pg from "pg";
import { describe, expect, it } from "vitest";
import { chainHashOf, chainMacOf } from "@/lib/control/audit/audit-chain";
import { verifyAuditChain } from "@/lib/control/audit/verify-audit-chain";
import { createCustomer } from "@/lib/control/customer/create-customer";
import { createApiToken } from "@/lib/control/token/create-api-token";
import { provideApiHarness } from "./helpers/api-harness";
import { depsFor, operatorContext, uniqueName } from "./helpers/policy-fixtures";

const api = provideApiHarness();
const ROOT = path.resolve(import.meta.dirname, "../..");

async function asOwner<T>(run: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: api.database().ownerUrl });
  await client.connect();
  try {
    await client.query("SET session_replication_role = replica");
    return await run(client);
  } finally {
    await client.end();
  }
}

function verify() {
  return verifyAuditChain({ db: api.db() }, { pageSize: 7 });
}

async function lastEntryId(): Promise<bigint> {
  const row = await api.db().auditEntry.findFirstOrThrow({
    orderBy: { id: "desc" },
    select: { id: true },
  });
  return row.id;
}

/** `npm run audit:verify` against this file's database, as the application role. */
function runAuditVerify(): Promise<{ code: number | null; output: string }> {
  const child = spawn(
    process.execPath,
    ["--conditions=react-server", "--import", "tsx", "scripts/audit-verify.ts"],
    {
      cwd: ROOT,
      env: { ...process.env, DATABASE_URL: api.database().url },
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  let output = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  child.stderr?.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  return new Promise((resolve) => child.once("exit", (code) => resolve({ code, output })));
}

describe("the audit chain", () => {
  it("200: whole after 48 concurrent changes, policy changes and token changes interleaved", async () => {
    const controlDeps = depsFor(api.db());
    for (let round = 0; round < 3; round++) {
      await Promise.all(
        Array.from({ length: 16 }, (_, index) =>
          index % 2 === 0
            ? createCustomer(
                { id: uniqueName("chain"), displayName: "Chained", tier: "free" },
                operatorContext(),
                controlDeps,
              )
            : createApiToken(
                { name: uniqueName("chain"), role: "viewer" },
                operatorContext(),
                api.authDeps(),
              ),
        ),
      );
    }
    const total = await api.db().auditEntry.count();
    const response = await api.call("GET", "/api/v1/audit/verification", {
      as: { token: api.as("viewer").token },
    });
    expect(response.status).toBe(200);
    expect(response.body).toEqual({
      isWhole: true,
      entriesVerified: total,
      entriesBeforeChain: 0,
      head: {
        entryId: String(await lastEntryId()),
        chainHash: expect.stringMatching(/^[0-9a-f]{64}$/),
      },
      firstBreak: null,
    });
  });

  it("401 without credentials", async () => {
    const response = await api.call("GET", "/api/v1/audit/verification", { as: null });
    expect(response.status).toBe(401);
  });

  it("a row inserted straight into the table with a correctly computed hash, but no key, is named unsigned", async () => {
    const previous = await api.db().auditEntry.findFirstOrThrow({
      orderBy: { id: "desc" },
      select: { chainHash: true },
    });
    const client = new pg.Client({ connectionString: api.database().url });
    await client.connect();
    let forgedId = "";
    try {
      const drawn = await client.query<{ id: string; at: Date }>(
        `SELECT nextval(pg_get_serial_sequence('"AuditEntry"', 'id'))::text AS id, date_trunc('milliseconds', clock_timestamp()) AS at`,
      );
      const { id, at } = drawn.rows[0] ?? { id: "", at: new Date() };
      forgedId = id;
      const content = {
        id: BigInt(id),
        at,
        actorType: "operator",
        actorId: api.as("admin").operatorId,
        actorName: "Admin Person",
        action: "tier.update",
        entityType: "tier",
        entityId: "free",
        customerId: null,
        before: null,
        after: null,
        reason: "looks legitimate",
        requestId: null,
        policyVersion: null,
      };
      const chainHash = chainHashOf(content, previous.chainHash ?? "");
      await client.query(
        `INSERT INTO "AuditEntry" ("id", "at", "actorType", "actorId", "actorName", "action", "entityType", "entityId", "reason", "chainHash", "chainMac")
         VALUES ($1::bigint, $2, 'operator', $3, 'Admin Person', 'tier.update', 'tier', 'free', 'looks legitimate', $4, $5)`,
        [
          id,
          at,
          content.actorId,
          chainHash,
          chainMacOf(chainHash, "a guess at the key, not the key"),
        ],
      );
    } finally {
      await client.end();
    }
    expect((await verify()).firstBreak).toEqual({
      entryId: forgedId,
      problem: "unsigned",
      message: `Entry ${forgedId} is not signed with AUDIT_KEY: it was written without the key (straight into the table) or under another key.`,
    });
    const script = await runAuditVerify();
    expect(script.code).toBe(1);
    expect(script.output).toContain(`audit:verify: BROKEN at entry ${forgedId} (unsigned)`);
    await asOwner((owner) =>
      owner.query(`DELETE FROM "AuditEntry" WHERE id = $1::bigint`, [forgedId]),
    );
    expect((await verify()).isWhole).toBe(true);
  });

  it("an altered row is named altered; a deleted one names the entry after it", async () => {
    const ids = (
      await api.db().auditEntry.findMany({ orderBy: { id: "asc" }, select: { id: true }, take: 12 })
    ).map((row) => row.id.toString());
    const [altered, deleted, next] = [ids[3], ids[8], ids[9]];
    await asOwner(async (owner) => {
      const original = await owner.query<{ reason: string }>(
        `SELECT reason FROM "AuditEntry" WHERE id = $1::bigint`,
        [altered],
      );
      await owner.query(`UPDATE "AuditEntry" SET reason = 'rewritten' WHERE id = $1::bigint`, [
        altered,
      ]);
      expect((await verify()).firstBreak).toMatchObject({ entryId: altered, problem: "altered" });
      await owner.query(`UPDATE "AuditEntry" SET reason = $2 WHERE id = $1::bigint`, [
        altered,
        original.rows[0]?.reason,
      ]);

      await owner.query(
        `CREATE TEMP TABLE kept AS SELECT * FROM "AuditEntry" WHERE id = $1::bigint`,
        [deleted],
      );
      await owner.query(`DELETE FROM "AuditEntry" WHERE id = $1::bigint`, [deleted]);
      expect((await verify()).firstBreak).toMatchObject({ entryId: next, problem: "altered" });
      await owner.query(`INSERT INTO "AuditEntry" SELECT * FROM kept`);
    });
    expect((await verify()).isWhole).toBe(true);
  });

  it("a row without a hash after the chain started is named unchained", async () => {
    const client = new pg.Client({ connectionString: api.database().url });
    await client.connect();
    const inserted = await client
      .query<{ id: string }>(
        `INSERT INTO "AuditEntry" ("actorType", "actorName", "action", "entityType", "entityId", "reason")
         VALUES ('system', 'test', 'tier.update', 'tier', 'free', 'no hash') RETURNING id::text`,
      )
      .finally(() => client.end());
    const id = inserted.rows[0]?.id ?? "";
    expect((await verify()).firstBreak).toMatchObject({ entryId: id, problem: "unchained" });
    await asOwner((owner) => owner.query(`DELETE FROM "AuditEntry" WHERE id = $1::bigint`, [id]));
  });
});
