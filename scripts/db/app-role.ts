/**
 * The least-privilege application role. Migrations run as the tables' owner
 * (DATABASE_OWNER_URL); the console, the worker and the scripts connect as a role that owns
 * nothing (DATABASE_URL), so it cannot ALTER or DROP a table or its triggers, cannot set
 * `session_replication_role` (superuser only), and is granted on the audit log only SELECT and
 * INSERT: UPDATE, DELETE and TRUNCATE are refused by privilege before the append-only trigger is
 * even reached.
 *
 * `ensureApplicationRole` creates the role when it is missing. Roles belong to the whole cluster,
 * not to a database, so concurrent runs (parallel test runs, two checkouts) would race on
 * CREATE ROLE: it is done under an advisory lock taken in the `postgres` database, which every
 * run shares (advisory locks are per database). An owner without CREATEROLE gets the exact
 * statement to ask a superuser for. `grantApplicationRole` (re)grants after every migration run,
 * so new tables are covered.
 */
import pg from "pg";
import { adminUrlFor, databaseNameOf } from "./databases";

/** pg_advisory_lock key for CREATE ROLE, on the `postgres` database ("LProle"). */
const CREATE_ROLE_LOCK = 0x4c50726f6c65;

export interface ApplicationRole {
  readonly name: string;
  /** The password to create it with; null for a role that logs in without one (trust, peer). */
  readonly password: string | null;
}

/**
 * The application role of the test suites (integration and e2e): one per cluster, shared by
 * every run, without a password (the test Postgres trusts local connections).
 */
export const TEST_APPLICATION_ROLE: ApplicationRole = {
  name: "limitplane_test_app",
  password: null,
};

function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

function quoteLiteral(value: string): string {
  return `'${value.replaceAll("'", "''")}'`;
}

function userOf(url: string): string {
  return decodeURIComponent(new URL(url).username) || "postgres";
}

/** The role DATABASE_URL logs in as, with its password. */
export function applicationRoleOf(appUrl: string): ApplicationRole {
  const url = new URL(appUrl);
  return {
    name: userOf(appUrl),
    password: url.password === "" ? null : decodeURIComponent(url.password),
  };
}

/** Whether two URLs log in as the same role: one role for migrations and the app. */
export function isSameRole(ownerUrl: string, appUrl: string): boolean {
  return userOf(ownerUrl) === userOf(appUrl);
}

/** `ownerUrl` logging in as `role` instead: the same host, port and database. */
export function urlForRole(ownerUrl: string, role: ApplicationRole): string {
  const url = new URL(ownerUrl);
  url.username = encodeURIComponent(role.name);
  url.password = role.password === null ? "" : encodeURIComponent(role.password);
  return url.toString();
}

/** Thrown when the role cannot be made or used as it is; the message says what to run. */
export class ApplicationRoleError extends Error {
  override name = "ApplicationRoleError";
}

async function withClient<T>(url: string, run: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5_000 });
  await client.connect();
  try {
    return await run(client);
  } finally {
    await client.end();
  }
}

function createStatement(role: ApplicationRole): string {
  return `CREATE ROLE ${quoteIdent(role.name)} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS${
    role.password === null ? "" : ` PASSWORD ${quoteLiteral(role.password)}`
  }`;
}

/**
 * Creates `role` when missing (the owner needs CREATEROLE, or is a superuser), and refuses a role
 * that could bypass the audit log's protection (a superuser). Returns whether it created it.
 */
export async function ensureApplicationRole(
  ownerUrl: string,
  role: ApplicationRole,
): Promise<boolean> {
  return withClient(adminUrlFor(ownerUrl), async (client) => {
    await client.query("SELECT pg_advisory_lock($1)", [CREATE_ROLE_LOCK]);
    try {
      const existing = await client.query<{ rolsuper: boolean }>(
        "SELECT rolsuper FROM pg_roles WHERE rolname = $1",
        [role.name],
      );
      const found = existing.rows[0];
      if (found !== undefined) {
        if (found.rolsuper) {
          throw new ApplicationRoleError(
            `DATABASE_URL logs in as "${role.name}", a superuser: it could disable the audit log's protection. Use a role without SUPERUSER (npm run db:deploy creates one when DATABASE_URL names a role that does not exist).`,
          );
        }
        return false;
      }
      const owner = await client.query<{ rolsuper: boolean; rolcreaterole: boolean }>(
        "SELECT rolsuper, rolcreaterole FROM pg_roles WHERE rolname = current_user",
      );
      const canCreate = owner.rows[0]?.rolsuper === true || owner.rows[0]?.rolcreaterole === true;
      if (!canCreate) {
        const shown = createStatement({
          name: role.name,
          password: role.password === null ? null : "<the password in DATABASE_URL>",
        });
        throw new ApplicationRoleError(
          `The application role "${role.name}" (the user in DATABASE_URL) does not exist, and "${userOf(ownerUrl)}" (DATABASE_OWNER_URL) may not create roles (no CREATEROLE). Ask a superuser to run:\n  ${shown};\nthen run npm run db:deploy again; it grants the role what the console needs.`,
        );
      }
      await client.query(createStatement(role));
      return true;
    } finally {
      await client.query("SELECT pg_advisory_unlock($1)", [CREATE_ROLE_LOCK]);
    }
  });
}

/**
 * What the application role may do in the owner's database, granted afresh (idempotent): read and
 * write every table, except the audit log (SELECT and INSERT only) and the migration history
 * (SELECT only, for the status page); use the sequences; nothing else.
 */
export async function grantApplicationRole(ownerUrl: string, roleName: string): Promise<void> {
  const role = quoteIdent(roleName);
  const database = quoteIdent(databaseNameOf(ownerUrl));
  await withClient(ownerUrl, async (client) => {
    await client.query("BEGIN");
    try {
      await client.query(`GRANT CONNECT, TEMPORARY ON DATABASE ${database} TO ${role}`);
      await client.query(`GRANT USAGE ON SCHEMA public TO ${role}`);
      await client.query(`REVOKE ALL ON ALL TABLES IN SCHEMA public FROM ${role}`);
      await client.query(
        `GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO ${role}`,
      );
      await client.query(`REVOKE UPDATE, DELETE ON "AuditEntry" FROM ${role}`);
      await client.query(`REVOKE INSERT, UPDATE, DELETE ON "_prisma_migrations" FROM ${role}`);
      await client.query(`GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO ${role}`);
      await client.query("COMMIT");
    } catch (error: unknown) {
      await client.query("ROLLBACK");
      throw error;
    }
  });
}
