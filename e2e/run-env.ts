/**
 * The end-to-end run's own database, Redis prefix and ports, shared by playwright.config.ts and the
 * specs. The run id is fixed once in the main process; workers inherit it through the environment.
 */
import { TEST_APPLICATION_ROLE, urlForRole } from "../scripts/db/app-role";
import { assertLocalUrl } from "../scripts/lib/local-database";

process.env.LP_E2E_RUN ??= `${Date.now().toString(36)}_${process.pid}`;
const run = process.env.LP_E2E_RUN;

export const E2E_PORT = Number(process.env.E2E_PORT ?? 3100);
export const BASE_URL = `http://127.0.0.1:${E2E_PORT}`;
/** A second server of the same build whose Redis is a port where nothing listens. */
export const NO_REDIS_PORT = E2E_PORT + 1;
export const NO_REDIS_BASE_URL = `http://127.0.0.1:${NO_REDIS_PORT}`;
export const DEAD_REDIS_URL = `redis://127.0.0.1:${E2E_PORT + 2}/0`;

const baseDatabaseUrl =
  process.env.TEST_DATABASE_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres";
// Refuses a non-local database (or Redis) before anything is created in it.
assertLocalUrl("TEST_DATABASE_URL", baseDatabaseUrl);
assertLocalUrl("TEST_REDIS_URL", process.env.TEST_REDIS_URL ?? "redis://127.0.0.1:6379/0");
const databaseUrl = new URL(baseDatabaseUrl);
databaseUrl.pathname = `/lp_e2e_${run}`;
/** The run's database as its owner: migrations, teardown, and specs that read rows directly. */
export const E2E_DATABASE_URL = databaseUrl.toString();
/**
 * The same database as the least-privilege application role every process of the run connects
 * as (scripts/db/app-role.ts; the role is shared with the integration tests).
 */
export const E2E_APP_DATABASE_URL = urlForRole(E2E_DATABASE_URL, TEST_APPLICATION_ROLE);
export const E2E_REDIS_URL = process.env.TEST_REDIS_URL ?? "redis://127.0.0.1:6379/0";
export const E2E_REDIS_PREFIX = `lpe:${run}:`;
export const E2E_SESSION_SECRET = `e2e-session-secret-${run}-0123456789abcdef`;
/** Signs the run's audit chain; the console runs as production, which refuses the default. */
export const E2E_AUDIT_KEY = `e2e-audit-key-${run}-0123456789abcdef-0123456789`;

/** Demo gateways the global setup starts for the run, sharing the run's Redis prefix. */
export const GATEWAY_PORTS = [E2E_PORT + 10, E2E_PORT + 11] as const;
export const GATEWAY_URLS = GATEWAY_PORTS.map((port) => `http://127.0.0.1:${port}`);

/** One operator per role, created by the global setup. Test-only credentials. */
export const E2E_ACCOUNTS = {
  admin: {
    email: "ada.admin@e2e.test",
    name: "Ada Admin",
    role: "admin",
    password: "e2e-admin-password-1",
  },
  operator: {
    email: "oscar.operator@e2e.test",
    name: "Oscar Operator",
    role: "operator",
    password: "e2e-operator-password-1",
  },
  viewer: {
    email: "vera.viewer@e2e.test",
    name: "Vera Viewer",
    role: "viewer",
    password: "e2e-viewer-password-1",
  },
} as const;
export type E2ERole = keyof typeof E2E_ACCOUNTS;

/** The environment every process of the run shares. */
export function runEnvironment(): NodeJS.ProcessEnv {
  return {
    ...process.env,
    DATABASE_URL: E2E_APP_DATABASE_URL,
    DATABASE_OWNER_URL: E2E_DATABASE_URL,
    REDIS_URL: E2E_REDIS_URL,
    REDIS_KEY_PREFIX: E2E_REDIS_PREFIX,
    SESSION_SECRET: E2E_SESSION_SECRET,
    AUDIT_KEY: E2E_AUDIT_KEY,
    NEXT_TELEMETRY_DISABLED: "1",
  };
}
