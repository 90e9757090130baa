import pg from "pg";
import { beforeAll, describe, expect, it } from "vitest";
import { customerHistory } from "@/lib/control/audit/customer-history";
import { listAuditEntries } from "@/lib/control/audit/list-audit-entries";
import { createCustomer } from "@/lib/control/customer/create-customer";
import { updateCustomer } from "@/lib/control/customer/update-customer";
import type { ControlDeps } from "@/lib/control/deps";
import { isAppError } from "@/lib/control/errors";
import { createTier } from "@/lib/control/tier/create-tier";
import { depsFor, importExamplePolicy, uniqueName } from "./helpers/policy-fixtures";
import { provideTestDatabase } from "./helpers/test-database";

const database = provideTestDatabase();
let deps: ControlDeps;

beforeAll(async () => {
  deps = depsFor(database.current().db);
  await importExamplePolicy(deps);
});

/** A connection as the application role, or (`as: "owner"`) as the tables' owner. */
async function withClient<T>(
  run: (client: pg.Client) => Promise<T>,
  as: "application" | "owner" = "application",
): Promise<T> {
  const { url, ownerUrl } = database.current();
  const client = new pg.Client({ connectionString: as === "owner" ? ownerUrl : url });
  await client.connect();
  try {
    return await run(client);
  } finally {
    await client.end();
  }
}

describe("the audit log is append-only in the database itself", () => {
  it.each([
    ["UPDATE", `UPDATE "AuditEntry" SET "reason" = 'rewritten'`],
    ["DELETE", `DELETE FROM "AuditEntry"`],
    ["TRUNCATE", `TRUNCATE "AuditEntry"`],
  ])("%s fails, even for the superuser, and changes nothing", async (operation, sql) => {
    await withClient(async (client) => {
      const before = await client.query(
        `SELECT count(*)::int AS n, min(reason) AS r FROM "AuditEntry"`,
      );
      expect(before.rows[0].n).toBeGreaterThan(0);
      await expect(client.query(sql)).rejects.toThrow(
        `AuditEntry is append-only: ${operation} is not allowed`,
      );
      const after = await client.query(
        `SELECT count(*)::int AS n, min(reason) AS r FROM "AuditEntry"`,
      );
      expect(after.rows).toEqual(before.rows);
    }, "owner");
  });

  it("INSERT still works: the log grows", async () => {
    await withClient(async (client) => {
      const count = async () =>
        Number(
          (
            await client.query<{ count: string }>(
              `SELECT count(*)::text AS count FROM "AuditEntry"`,
            )
          ).rows[0]?.count,
        );
      const before = await count();
      const inserted = await client.query<{ id: string }>(
        `INSERT INTO "AuditEntry" ("actorType", "actorName", "action", "entityType", "entityId", "reason")
         VALUES ('system', 'test', 'tier.update', 'tier', 'free', 'append') RETURNING id::text`,
      );
      expect(await count()).toBe(before + 1);
      const id = inserted.rows[0]?.id;
      const row = await client.query<{ reason: string }>(
        `SELECT reason FROM "AuditEntry" WHERE id = $1::bigint`,
        [id],
      );
      expect(row.rows).toEqual([{ reason: "append" }]);
    });
  });
});

describe("the application role cannot rewrite the audit log (issue 14)", () => {
  /** Every row, as text: equal before and after means nothing was changed. */
  const snapshot = (client: pg.Client) =>
    client
      .query<{ rows: string }>(
        `SELECT count(*)::text || ':' || coalesce(string_agg(id::text || reason, ',' ORDER BY id), '') AS rows FROM "AuditEntry"`,
      )
      .then((result) => result.rows[0]?.rows);

  it("connects as a role that is neither a superuser nor the tables' owner", async () => {
    await withClient(async (client) => {
      const { rows } = await client.query<{ su: boolean; owner: string; me: string }>(
        `SELECT (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) AS su,
                (SELECT tableowner FROM pg_tables WHERE tablename = 'AuditEntry') AS owner,
                current_user AS me`,
      );
      expect(rows[0]?.su).toBe(false);
      expect(rows[0]?.owner).not.toBe(rows[0]?.me);
    });
  });

  it.each([
    [
      "UPDATE",
      `UPDATE "AuditEntry" SET "reason" = 'rewritten'`,
      "permission denied for table AuditEntry",
    ],
    ["DELETE", `DELETE FROM "AuditEntry"`, "permission denied for table AuditEntry"],
    ["TRUNCATE", `TRUNCATE "AuditEntry"`, "permission denied for table AuditEntry"],
    [
      "disabling its triggers",
      `ALTER TABLE "AuditEntry" DISABLE TRIGGER ALL`,
      "must be owner of table AuditEntry",
    ],
    [
      "dropping a trigger",
      `DROP TRIGGER "AuditEntry_no_update_delete" ON "AuditEntry"`,
      "must be owner of relation AuditEntry",
    ],
    [
      "replacing the trigger's function",
      `CREATE OR REPLACE FUNCTION "audit_entry_is_append_only"() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$`,
      "permission denied for schema public",
    ],
    [
      "session_replication_role = replica (which skips triggers)",
      `SET session_replication_role = replica`,
      'permission denied to set parameter "session_replication_role"',
    ],
  ])("refuses %s, and the log is unchanged", async (_what, sql, refusal) => {
    await withClient(async (client) => {
      const before = await snapshot(client);
      await client.query("BEGIN");
      await expect(client.query(sql)).rejects.toThrow(refusal);
      await client.query("ROLLBACK");
      // The same inside one transaction, as an attacker would chain them.
      await client.query("BEGIN");
      await expect(
        client.query(`SET LOCAL session_replication_role = replica; DELETE FROM "AuditEntry"`),
      ).rejects.toThrow(/permission denied/);
      await client.query("ROLLBACK");
      expect(await snapshot(client)).toBe(before);
    });
  });

  it("may read and append, which is all the services do", async () => {
    await withClient(async (client) => {
      const before = await client.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM "AuditEntry"`,
      );
      await client.query(
        `INSERT INTO "AuditEntry" ("actorType", "actorName", "action", "entityType", "entityId", "reason")
         VALUES ('system', 'test', 'tier.update', 'tier', 'free', 'append as the application')`,
      );
      const after = await client.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM "AuditEntry"`,
      );
      expect(after.rows[0]?.n).toBe((before.rows[0]?.n ?? 0) + 1);
    });
  });
});

describe("listAuditEntries", () => {
  it("pages newest first by (at, id) with a keyset cursor, ties included, without gaps or repeats", async () => {
    const actorId = uniqueName("pager");
    // 23 entries over 5 instants: several share an instant, so the id must break ties.
    await withClient(async (client) => {
      for (let index = 0; index < 23; index++) {
        await client.query(
          `INSERT INTO "AuditEntry" ("at", "actorType", "actorId", "actorName", "action", "entityType", "entityId", "reason")
           VALUES ($1, 'operator', $2, 'Pager', 'tier.update', 'tier', $3, 'paging')`,
          [new Date(Date.UTC(2030, 0, 1, 0, 0, index % 5)), actorId, `t${index}`],
        );
      }
    });
    const expected = await withClient(async (client) => {
      // Aliased: ORDER BY "id" would otherwise sort the text output column.
      const { rows } = await client.query<{ key: string }>(
        `SELECT id::text AS key FROM "AuditEntry" WHERE "actorId" = $1 ORDER BY "at" DESC, id DESC`,
        [actorId],
      );
      return rows.map((row) => row.key);
    });
    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    let lastPage: Awaited<ReturnType<typeof listAuditEntries>> | undefined;
    do {
      const page = await listAuditEntries({ actorId, limit: 4, cursor }, deps);
      lastPage = page;
      seen.push(...page.entries.map((entry) => entry.id));
      cursor = page.nextCursor ?? undefined;
      pages++;
    } while (cursor !== undefined);
    expect(seen).toEqual(expected);
    expect(pages).toBe(6);

    // Back from the oldest page with `before`: the same pages in reverse, each newest first.
    expect(lastPage?.previousCursor).not.toBeNull();
    const backwards: string[][] = [];
    let before = lastPage?.previousCursor ?? undefined;
    while (before !== undefined) {
      const page = await listAuditEntries({ actorId, limit: 4, before }, deps);
      backwards.unshift(page.entries.map((entry) => entry.id));
      expect(page.nextCursor).not.toBeNull();
      before = page.previousCursor ?? undefined;
    }
    expect(backwards.flat()).toEqual(expected.slice(0, 20));
    expect(backwards.map((page) => page.length)).toEqual([4, 4, 4, 4, 4]);
  });

  it("filters by actor, action, entity, customer and time range", async () => {
    const customerId = uniqueName("audited");
    const actor = { type: "operator" as const, id: uniqueName("op"), name: "Filter Tester" };
    const startedAt = new Date(Date.now() - 1000).toISOString();
    await createCustomer(
      { id: customerId, displayName: "Audited", tier: "free" },
      { actor, reason: "new" },
      deps,
    );
    await updateCustomer(
      { id: customerId, expectedVersion: 1, tier: "pro" },
      { actor, reason: "upgrade" },
      deps,
    );
    const tier = uniqueName("audit-tier");
    await createTier(
      { name: tier, limit: { algorithm: "token-bucket", capacity: 100, refillPerSec: 10 } },
      { actor, reason: "plan" },
      deps,
    );

    const byActor = await listAuditEntries({ actorId: actor.id }, deps);
    expect(byActor.entries.map((entry) => entry.action)).toEqual([
      "tier.create",
      "customer.update",
      "customer.create",
    ]);
    expect(byActor.entries[0]).toMatchObject({
      actor,
      reason: "plan",
      entityType: "tier",
      entityId: tier,
    });

    const byAction = await listAuditEntries({ actorId: actor.id, action: "customer.update" }, deps);
    expect(byAction.entries.map((entry) => entry.reason)).toEqual(["upgrade"]);

    const byEntity = await listAuditEntries({ entityType: "tier", entityId: tier }, deps);
    expect(byEntity.entries.map((entry) => entry.action)).toEqual(["tier.create"]);

    const history = await customerHistory(customerId, {}, deps);
    expect(history.entries.map((entry) => [entry.action, entry.before, entry.after])).toEqual([
      [
        "customer.update",
        expect.objectContaining({ tier: "free" }),
        expect.objectContaining({ tier: "pro" }),
      ],
      ["customer.create", null, expect.objectContaining({ tier: "free" })],
    ]);

    const inRange = await listAuditEntries(
      { actorId: actor.id, from: startedAt, to: new Date(Date.now() + 1000).toISOString() },
      deps,
    );
    expect(inRange.entries).toHaveLength(3);
    const beforeRange = await listAuditEntries({ actorId: actor.id, to: startedAt }, deps);
    expect(beforeRange.entries).toHaveLength(0);
  });

  it("refuses a cursor it did not issue, and an entity id without its type", async () => {
    for (const options of [
      { cursor: "not-a-cursor" },
      { before: "not-a-cursor" },
      { entityId: "free" },
    ]) {
      const error = await listAuditEntries(options, deps).catch((caught: unknown) => caught);
      expect(isAppError(error) && error.code).toBe("VALIDATION_FAILED");
    }
  });
});
