/**
 * `npm run db:deploy` with an owner and an application role (issue 14, item 4): migrations run as
 * DATABASE_OWNER_URL, which creates the role of DATABASE_URL when it is missing. Roles are
 * cluster-wide, so three deploys racing from three processes create it once and all succeed. An
 * owner without CREATEROLE is told exactly what to run; a superuser as the application role is
 * refused. Each case leaves no role or database behind.
 */
import { randomBytes } from "node:crypto";
import path from "node:path";
import pg from "pg";
import { afterAll, describe, expect, inject, it } from "vitest";
import { createDatabase, dropDatabase, withDatabase } from "../../scripts/db/databases";
import { type Finished, runToEnd } from "./helpers/run-to-end";

const ROOT = path.resolve(import.meta.dirname, "../..");
const ownerOfRun = inject("ownerDatabaseUrl");
const roles: string[] = [];
const databases: string[] = [];

function uniqueRole(what: string): string {
  const name = `lp_t_${what}_${randomBytes(4).toString("hex")}`;
  roles.push(name);
  return name;
}

async function newDatabase(): Promise<string> {
  const url = withDatabase(ownerOfRun, `lp_t_roles_${randomBytes(4).toString("hex")}`);
  databases.push(url);
  return url;
}

function asRole(url: string, role: string): string {
  const parsed = new URL(url);
  parsed.username = role;
  parsed.password = "";
  return parsed.toString();
}

async function superuser<T>(run: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: withDatabase(ownerOfRun, "postgres") });
  await client.connect();
  try {
    return await run(client);
  } finally {
    await client.end();
  }
}

/** `npm run db:deploy` as a process of its own. */
function deploy(env: Record<string, string>): Promise<Finished> {
  return runToEnd(
    process.execPath,
    ["--conditions=react-server", "--import", "tsx", "scripts/db/migrate.ts", "deploy"],
    { cwd: ROOT, env: { ...process.env, ...env } },
  );
}

afterAll(async () => {
  for (const url of databases) await dropDatabase(url);
  await superuser(async (client) => {
    for (const role of roles) await client.query(`DROP ROLE IF EXISTS "${role}"`);
  });
});

describe("the application role", () => {
  it("three deploys racing from three processes create it once, and all succeed", async () => {
    const role = uniqueRole("app");
    const targets = await Promise.all([newDatabase(), newDatabase(), newDatabase()]);
    const results = await Promise.all(
      targets.map((url) => deploy({ DATABASE_OWNER_URL: url, DATABASE_URL: asRole(url, role) })),
    );
    for (const result of results) expect(result.code, result.output).toBe(0);
    const said = results.map(
      (result) => /Application role "[^"]+": (created|granted)/.exec(result.output)?.[1],
    );
    expect(said.filter((word) => word === "created")).toHaveLength(1);
    expect(said.filter((word) => word === "granted")).toHaveLength(2);
    const { rows } = await superuser((client) =>
      client.query<{ rolsuper: boolean; rolcreaterole: boolean; rolcanlogin: boolean }>(
        "SELECT rolsuper, rolcreaterole, rolcanlogin FROM pg_roles WHERE rolname = $1",
        [role],
      ),
    );
    expect(rows).toEqual([{ rolsuper: false, rolcreaterole: false, rolcanlogin: true }]);
    // The role reads and appends in every database it was granted.
    for (const url of targets) {
      const client = new pg.Client({ connectionString: asRole(url, role) });
      await client.connect();
      try {
        await client.query(
          `INSERT INTO "AuditEntry" ("actorType", "actorName", "action", "entityType", "entityId", "reason")
           VALUES ('system', 'test', 'tier.update', 'tier', 'free', 'granted')`,
        );
        await expect(client.query(`DELETE FROM "AuditEntry"`)).rejects.toThrow("permission denied");
      } finally {
        await client.end();
      }
    }
  });

  it("an owner without CREATEROLE is told exactly what to run; after it, deploy succeeds", async () => {
    const owner = uniqueRole("owner");
    const role = uniqueRole("app");
    await superuser((client) => client.query(`CREATE ROLE "${owner}" LOGIN CREATEDB`));
    const url = asRole(await newDatabase(), owner);
    await createDatabase(url);
    const refused = await deploy({ DATABASE_OWNER_URL: url, DATABASE_URL: asRole(url, role) });
    expect(refused.code).toBe(1);
    const statement = `CREATE ROLE "${role}" LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS;`;
    expect(refused.output).toContain(
      `The application role "${role}" (the user in DATABASE_URL) does not exist, and "${owner}" (DATABASE_OWNER_URL) may not create roles (no CREATEROLE). Ask a superuser to run:\n  ${statement}`,
    );
    expect(refused.output).not.toMatch(/at .*\.ts:\d+/);
    await superuser((client) => client.query(statement));
    const deployed = await deploy({ DATABASE_OWNER_URL: url, DATABASE_URL: asRole(url, role) });
    expect(deployed.code, deployed.output).toBe(0);
    expect(deployed.output).toContain(`Application role "${role}": granted.`);
  });

  it("a superuser as the application role is refused, naming why", async () => {
    const url = await newDatabase();
    const superuserName = new URL(ownerOfRun).username || "postgres";
    const owner = uniqueRole("owner");
    await superuser((client) => client.query(`CREATE ROLE "${owner}" LOGIN CREATEDB CREATEROLE`));
    const refused = await deploy({
      DATABASE_OWNER_URL: asRole(url, owner),
      DATABASE_URL: asRole(url, superuserName),
    });
    expect(refused.code).toBe(1);
    expect(refused.output).toContain(
      `DATABASE_URL logs in as "${superuserName}", a superuser: it could disable the audit log's protection.`,
    );
  });

  it("one role for both (no DATABASE_OWNER_URL) still deploys, with a warning", async () => {
    const url = await newDatabase();
    const result = await deploy({ DATABASE_URL: url, DATABASE_OWNER_URL: "" });
    expect(result.code, result.output).toBe(0);
    expect(result.output).toContain("DATABASE_URL connects as the tables' owner");
  });
});
