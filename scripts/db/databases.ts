/** Creating and dropping whole databases, for setup, scratch checks and isolated test runs. */
import pg from "pg";

/** The same server, database `postgres`: where CREATE/DROP DATABASE is issued from. */
export function adminUrlFor(databaseUrl: string): string {
  const url = new URL(databaseUrl);
  url.pathname = "/postgres";
  return url.toString();
}

/** `databaseUrl` with its database name replaced by `name`. */
export function withDatabase(databaseUrl: string, name: string): string {
  const url = new URL(databaseUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

export function databaseNameOf(databaseUrl: string): string {
  return decodeURIComponent(new URL(databaseUrl).pathname.replace(/^\//, ""));
}

function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

async function withAdmin<T>(
  databaseUrl: string,
  run: (client: pg.Client) => Promise<T>,
): Promise<T> {
  const client = new pg.Client({
    connectionString: adminUrlFor(databaseUrl),
    connectionTimeoutMillis: 5_000,
  });
  await client.connect();
  try {
    return await run(client);
  } finally {
    await client.end();
  }
}

/** Creates the database named in `databaseUrl` unless it exists. Returns true if it created it. */
export async function ensureDatabase(databaseUrl: string): Promise<boolean> {
  const name = databaseNameOf(databaseUrl);
  return withAdmin(databaseUrl, async (client) => {
    const found = await client.query("SELECT 1 FROM pg_database WHERE datname = $1", [name]);
    if (found.rowCount !== 0) return false;
    await client.query(`CREATE DATABASE ${quoteIdent(name)}`);
    return true;
  });
}

export async function createDatabase(databaseUrl: string): Promise<void> {
  await withAdmin(databaseUrl, (client) =>
    client.query(`CREATE DATABASE ${quoteIdent(databaseNameOf(databaseUrl))}`),
  );
}

export async function dropDatabase(databaseUrl: string): Promise<void> {
  await withAdmin(databaseUrl, (client) =>
    client.query(`DROP DATABASE IF EXISTS ${quoteIdent(databaseNameOf(databaseUrl))} WITH (FORCE)`),
  );
}

/** Runs `sql` (several statements allowed) against `databaseUrl`. */
export async function executeSql(databaseUrl: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: databaseUrl, connectionTimeoutMillis: 5_000 });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}
