/**
 * The composition root: the one place where the process-wide dependencies are built (the Prisma
 * client, the Redis connections, the shared limiter store, the clock) and handed to services.
 * Pages, server actions, route handlers (and the API's authenticator), the worker's standard jobs
 * and the scripts take dependencies from here and pass them to the services, which never fetch
 * their own. Tests that call route handlers or render pages install their own (`installDeps`:
 * their database, a driven clock); tests of services pass them directly.
 *
 * Every value is created on first use, so importing this module opens no connection.
 */
import { readFileSync } from "node:fs";
import type { Clock } from "@limitplane/enforcer/limiter";
import type { Authenticator } from "@/lib/api/endpoint";
import { type SessionSettings, TOUCH_INTERVAL_MS } from "@/lib/control/auth/auth-settings";
import { authenticateRequest } from "@/lib/control/auth/authenticate";
import { DEFAULT_SCRYPT_PARAMS } from "@/lib/control/auth/password";
import { SignInLimiter } from "@/lib/control/auth/sign-in-limiter";
import type { SsoSettings } from "@/lib/control/auth/sso-settings";
import type {
  AuthDeps,
  ControlDeps,
  ExplainDeps,
  FleetDeps,
  RejectedCustomerDeps,
  SeenCustomerDeps,
  SeenRedisDeps,
} from "@/lib/control/deps";
import type { ScopeCountsDeps } from "@/lib/control/dry-run/read-scope-counts";
import type { ReadGlobalSharesDeps } from "@/lib/control/region/read-global-shares";
import type { PropagationDeps } from "@/lib/control/region/read-propagation";
import { consoleRedis, consoleRegionRedis } from "./console-redis";
import { getPrisma } from "./db";
import { loadEnv } from "./env";
import { getSharedLimiterStore } from "./limiter-store";
import type { OpsRedisDeps } from "./ops/ops-redis";
import { createRedis } from "./redis";
import { ssoRechecker } from "./sso/oidc-flow";

/** The control plane's clock: the wall clock, in epoch milliseconds. */
export const systemClock: Clock = { nowMs: () => Date.now() };

/** The session lifetimes the environment sets (SESSION_LIFETIME_MINUTES, SESSION_IDLE_MINUTES). */
export function sessionSettingsFromEnv(): SessionSettings {
  const env = loadEnv();
  return {
    lifetimeMs: env.SESSION_LIFETIME_MINUTES * 60_000,
    idleMs: env.SESSION_IDLE_MINUTES * 60_000,
    touchIntervalMs: TOUCH_INTERVAL_MS,
  };
}

/** Everything the composition root provides. */
export interface Composition {
  readonly control: ControlDeps;
  readonly auth: AuthDeps;
  readonly fleet: FleetDeps;
  readonly explain: ExplainDeps;
  readonly ops: OpsRedisDeps;
  readonly seen: SeenRedisDeps;
  readonly propagation: PropagationDeps;
}

type Built = { -readonly [Key in keyof Composition]?: Composition[Key] };

const globalForDeps = globalThis as typeof globalThis & { limitplaneDeps?: Built };

function built(): Built {
  globalForDeps.limitplaneDeps ??= {};
  return globalForDeps.limitplaneDeps;
}

/** The clock every process-wide dependency reads (a test's, once installed). */
export function clock(): Clock {
  return controlDeps().clock;
}

/** The control-plane services' dependencies: the database, the publisher, the clock. */
export function controlDeps(): ControlDeps {
  const deps = built();
  if (deps.control === undefined) {
    const db = getPrisma();
    deps.control = {
      db,
      // With REGIONS every region is published by the worker's job of its own (woken at commit
      // by NOTIFY), never by the console, so one region's progress is recorded in one place.
      publisher:
        loadEnv().REGIONS.length > 0
          ? null
          : {
              db,
              redis: createRedis("control", { connectionName: "limitplane-publisher" }),
              prefix: loadEnv().REDIS_KEY_PREFIX,
              clock: systemClock,
            },
      clock: systemClock,
      auditKey: loadEnv().AUDIT_KEY,
    };
  }
  return deps.control;
}

/** The authentication, operator and token services' dependencies. */
export function authDeps(): AuthDeps {
  const deps = built();
  if (deps.auth === undefined) {
    const control = controlDeps();
    const sso = ssoSettingsFromEnv();
    deps.auth = {
      db: control.db,
      clock: control.clock,
      passwordParams: DEFAULT_SCRYPT_PARAMS,
      sessions: sessionSettingsFromEnv(),
      signInLimiter: new SignInLimiter({
        store: getSharedLimiterStore("signin:"),
        secret: loadEnv().SESSION_SECRET,
      }),
      auditKey: loadEnv().AUDIT_KEY,
      passwordSignIn: {
        isEnabled: loadEnv().PASSWORD_SIGN_IN === "on",
        breakGlassEmails: loadEnv().BREAK_GLASS_ADMINS,
      },
      ...(sso === null ? {} : { ssoRecheck: ssoRechecker(sso, loadEnv().SESSION_SECRET) }),
    };
  }
  return deps.auth;
}

let ssoSettings: { value: SsoSettings | null } | undefined;

/** Single sign-on as OIDC_* configures it (docs/sso.md), or null when OIDC_ISSUER is unset. */
export function ssoSettingsFromEnv(): SsoSettings | null {
  if (ssoSettings === undefined) {
    const env = loadEnv();
    ssoSettings = {
      value:
        env.OIDC_ISSUER === undefined ||
        env.OIDC_CLIENT_ID === undefined ||
        env.OIDC_ROLE_MAP === undefined
          ? null
          : {
              issuer: env.OIDC_ISSUER,
              clientId: env.OIDC_CLIENT_ID,
              clientSecret: env.OIDC_CLIENT_SECRET ?? null,
              roleClaim: env.OIDC_ROLE_CLAIM,
              roleGrants: env.OIDC_ROLE_MAP,
              displayName: env.OIDC_DISPLAY_NAME,
              caPem: env.OIDC_CA_FILE === undefined ? null : readFileSync(env.OIDC_CA_FILE, "utf8"),
              recheckIntervalMs: env.OIDC_RECHECK_MINUTES * 60_000,
              onProviderOutage: env.OIDC_RECHECK_OUTAGE,
            },
    };
  }
  return ssoSettings.value;
}

/** The API's authenticator: a session cookie or an API token, checked against `authDeps()`. */
export const apiAuthenticator: Authenticator = {
  authenticate: (request) => authenticateRequest(request, authDeps()),
};

/** The fleet reads' dependencies: the console's read connection (one per process), the prefix. */
export function fleetDeps(): FleetDeps {
  const deps = built();
  deps.fleet ??= {
    redis: consoleRedis(),
    prefix: loadEnv().REDIS_KEY_PREFIX,
    clock: controlDeps().clock,
  };
  return deps.fleet;
}

/** Reading a version's reach across regions: the database and REGIONS' names. */
export function propagationDeps(): PropagationDeps {
  const deps = built();
  return (
    deps.propagation ?? {
      db: controlDeps().db,
      regions: loadEnv().REGIONS.map((region) => region.name),
    }
  );
}

/**
 * The fleet reads of every region (REGIONS), each on the console's read connection to that
 * region's Redis; one entry named "" for a one-Redis installation.
 */
export function regionFleetDeps(): readonly {
  readonly region: string;
  readonly deps: FleetDeps;
}[] {
  const regions = loadEnv().REGIONS;
  if (regions.length === 0) return [{ region: "", deps: fleetDeps() }];
  return regions.map((region) => ({
    region: region.name,
    deps: {
      redis: consoleRegionRedis(region),
      prefix: loadEnv().REDIS_KEY_PREFIX,
      clock: controlDeps().clock,
    },
  }));
}

/**
 * Reading the global limits' shares: the database, and the console's read connection to each
 * region's Redis (REGIONS); one entry named "" for a one-Redis installation.
 */
export function globalShareDeps(): ReadGlobalSharesDeps {
  const regions = loadEnv().REGIONS;
  return {
    db: controlDeps().db,
    regions:
      regions.length === 0
        ? [{ region: "", redis: consoleRedis() }]
        : regions.map((region) => ({ region: region.name, redis: consoleRegionRedis(region) })),
    prefix: loadEnv().REDIS_KEY_PREFIX,
    clock: controlDeps().clock,
  };
}

/** Explain's dependencies: the control plane's database, the enforcers' store. */
export function explainDeps(): ExplainDeps {
  const deps = built();
  const control = controlDeps();
  deps.explain ??= { db: control.db, store: getSharedLimiterStore(""), clock: control.clock };
  return deps.explain;
}

/** What the per-minute reads need: the database, and the live minutes from the enforcers' Redis. */
export function scopeMinutesDeps(): Pick<ControlDeps, "db" | "clock"> & { live: FleetDeps } {
  const control = controlDeps();
  return { db: control.db, clock: control.clock, live: fleetDeps() };
}

/** The dry-run pages' per-minute reads: the database, and the live minutes from the enforcers' Redis. */
export function scopeCountsDeps(): ScopeCountsDeps {
  const fleet = fleetDeps();
  return { db: controlDeps().db, redis: fleet.redis, prefix: fleet.prefix };
}

/** The customer page's reads of the enforcers' reports (recent rejections). */
export function opsRedisDeps(): OpsRedisDeps {
  const deps = built();
  deps.ops ??= { redis: consoleRedis(), prefix: loadEnv().REDIS_KEY_PREFIX };
  return deps.ops;
}

/** The seen-customer reads' Redis side: the console's read connection, the prefix, the clock. */
export function seenRedisDeps(): SeenRedisDeps {
  const deps = built();
  deps.seen ??= { redis: consoleRedis(), prefix: loadEnv().REDIS_KEY_PREFIX, clock: clock() };
  return deps.seen;
}

/** Listing seen customers: the Redis side and the registry's database. */
export function seenCustomerDeps(): SeenCustomerDeps {
  return { ...seenRedisDeps(), db: controlDeps().db };
}

/** Ranking rejected customers: the same Redis reads (the enforcers' tally) and the registry. */
export function rejectedCustomerDeps(): RejectedCustomerDeps {
  return seenCustomerDeps();
}

/**
 * Replaces some of the process-wide dependencies (tests that call route handlers or render pages
 * with their own database, Redis or clock). What is not given is built on first use as usual.
 */
export function installDeps(deps: Partial<Composition>): void {
  Object.assign(built(), deps);
}
