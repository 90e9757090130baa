/**
 * The tests create and drop databases and flush key prefixes: they run against this machine's
 * Postgres and Redis only. `assertLocalUrl` refuses anything else before a test touches it, with
 * the variable and the host named (the integration and e2e setups call it on TEST_DATABASE_URL
 * and TEST_REDIS_URL).
 */

const LOCAL_HOSTS = new Set(["localhost", "127.0.0.1", "::1", "[::1]"]);

/** Throws unless `url` (from the environment variable `variable`) points at this machine. */
export function assertLocalUrl(variable: string, url: string): void {
  let host: string;
  try {
    host = new URL(url).hostname;
  } catch {
    throw new Error(`Refusing to run the tests: ${variable} is not a URL.`);
  }
  if (!LOCAL_HOSTS.has(host)) {
    throw new Error(
      `Refusing to run the tests against a non-local database: ${variable} points at host "${host === "" ? "(none)" : host}". The tests create and drop databases; use localhost, 127.0.0.1 or ::1.`,
    );
  }
}
