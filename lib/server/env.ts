/**
 * Environment configuration, parsed once with zod. Every process (console, worker, gateways,
 * scripts) reads its settings through `loadEnv()`; nothing else touches `process.env` for these.
 *
 * A bad value stops the process with ONE line that names the variable and the problem
 * (`formatEnvError`), never a stack trace. Defaults work on a development machine with Postgres and
 * Redis on their standard local ports.
 */
import "server-only";
import { z } from "zod";
import { DEV_AUDIT_KEY } from "@/lib/control/audit/audit-chain";
import { parseRoleMap, type RoleGrant } from "@/lib/control/auth/sso-settings";

const postgresUrl = z
  .string()
  .trim()
  .min(1, { error: "is empty", abort: true })
  .refine((value) => URL.canParse(value), { error: "is not a URL", abort: true })
  .refine((value) => ["postgres:", "postgresql:"].includes(new URL(value).protocol), {
    error: "must start with postgres:// or postgresql://",
    abort: true,
  })
  .refine((value) => new URL(value).hostname !== "", "has no host");

const redisUrl = z
  .string()
  .trim()
  .min(1, { error: "is empty", abort: true })
  .refine((value) => URL.canParse(value), { error: "is not a URL", abort: true })
  .refine((value) => ["redis:", "rediss:"].includes(new URL(value).protocol), {
    error: "must start with redis:// or rediss://",
    abort: true,
  })
  .refine((value) => new URL(value).hostname !== "", "has no host")
  .refine((value) => {
    const db = new URL(value).pathname.replace(/^\//, "");
    return db === "" || /^(?:[0-9]|1[0-5])$/.test(db);
  }, "selects a database outside 0-15 (the path after the host is the database number)");

const port = z.coerce
  .number({ error: "must be a number" })
  .int("must be a whole number")
  .min(1, "must be between 1 and 65535")
  .max(65535, "must be between 1 and 65535");

function minutes(min: number, max: number) {
  return z.coerce
    .number({ error: "must be a number of minutes" })
    .int("must be a whole number of minutes")
    .min(min, `must be at least ${min}`)
    .max(max, `must be at most ${max}`);
}

/**
 * A comma-separated list of http(s) URLs, parsed to an array (empty: none). Each problem names the
 * entry by position, never by value: a webhook URL often carries a secret.
 */
const webhookUrls = z
  .string()
  .default("")
  .transform((value, ctx) => {
    const urls = value
      .split(",")
      .map((entry) => entry.trim())
      .filter((entry) => entry !== "");
    urls.forEach((url, index) => {
      const isWebUrl = URL.canParse(url) && ["http:", "https:"].includes(new URL(url).protocol);
      if (!isWebUrl) {
        ctx.addIssue({
          code: "custom",
          message: `entry ${index + 1} is not an http:// or https:// URL (a comma-separated list is expected)`,
        });
      }
    });
    if (new Set(urls).size !== urls.length) {
      ctx.addIssue({ code: "custom", message: "lists the same URL twice" });
    }
    return urls;
  });

/**
 * A comma-separated `host:port` list (IPv6 as `[::1]:7000`), parsed to a list (empty: unset). Each
 * problem names the entry by position. Redis Cluster seed nodes and Redis sentinels use it.
 */
function hostPortList(example: string) {
  return z
    .string()
    .default("")
    .transform((value, ctx) => {
      const entries = value
        .split(",")
        .map((entry) => entry.trim())
        .filter((entry) => entry !== "");
      const nodes: { host: string; port: number }[] = [];
      entries.forEach((entry, index) => {
        const match = /^(?:\[([0-9A-Fa-f:.]+)\]|([A-Za-z0-9.-]+)):(\d{1,5})$/.exec(entry);
        const port = Number(match?.[3]);
        if (match === null || !(port >= 1 && port <= 65535)) {
          ctx.addIssue({
            code: "custom",
            message: `entry ${index + 1} is not host:port with a port from 1 to 65535 (a comma-separated list such as ${example} is expected)`,
          });
          return;
        }
        nodes.push({ host: match[1] ?? match[2] ?? "", port });
      });
      if (new Set(nodes.map((node) => `${node.host}:${node.port}`)).size !== nodes.length) {
        ctx.addIssue({ code: "custom", message: "lists the same host:port twice" });
      }
      return nodes;
    });
}

/** A region's name: what operators read in the console and gateways are started with. */
const REGION_NAME = /^[a-z][a-z0-9-]{0,31}$/;

/**
 * REGIONS (docs/regions.md): a JSON array of `{ name, url, clusterNodes?, sentinels?,
 * sentinelName?, sentinelUsername?, sentinelPassword?, sentinelTls? }`, one per region, each
 * with its own Redis (one server, a Cluster, or a primary behind Sentinel), written as the
 * single-Redis variables would be. Each problem names the entry by position and the field; a
 * value is never echoed (a URL may carry a password).
 */
const ZRegionEntry = z.strictObject({
  name: z.string({ error: "must be a string" }).regex(REGION_NAME, {
    error: "must be 1-32 lower-case letters, digits or '-', starting with a letter",
  }),
  url: redisUrl,
  clusterNodes: hostPortList("10.0.0.1:7000,10.0.0.2:7000"),
  sentinels: hostPortList("10.0.0.1:26379,10.0.0.2:26379"),
  sentinelName: z
    .string({ error: "must be a string" })
    .regex(/^[A-Za-z0-9._-]{1,64}$/, "must be 1-64 letters, digits, '.', '_' or '-'")
    .optional(),
  sentinelUsername: z.string({ error: "must be a string" }).min(1, "is empty").optional(),
  sentinelPassword: z.string({ error: "must be a string" }).min(1, "is empty").optional(),
  sentinelTls: z.boolean({ error: "must be true or false" }).default(false),
});

/** Where one region's Redis is, as `createRedisClient` and the enforcer take it. */
export interface RedisTarget {
  readonly url: string;
  readonly clusterNodes: readonly { host: string; port: number }[];
  readonly sentinel?: {
    readonly nodes: readonly { host: string; port: number }[];
    readonly name: string;
    readonly username?: string;
    readonly password?: string;
    readonly tls: boolean;
  };
}

/** One configured region: its name and its Redis. */
export interface Region {
  readonly name: string;
  readonly redis: RedisTarget;
}

function describeIssuePath(path: readonly PropertyKey[]): string {
  const [index, ...rest] = path;
  const entry = typeof index === "number" ? `entry ${index + 1}` : "the list";
  return rest.length === 0 ? entry : `${entry} field "${rest.map(String).join(".")}"`;
}

const regionList = z
  .string()
  .optional()
  .transform((value, ctx): Region[] => {
    if (value === undefined || value.trim() === "") return [];
    let parsed: unknown;
    try {
      parsed = JSON.parse(value);
    } catch {
      ctx.addIssue({
        code: "custom",
        message:
          'is not JSON (a list such as [{"name":"eu-west","url":"redis://10.0.0.1:6379/0"}] is expected)',
      });
      return [];
    }
    const result = z
      .array(ZRegionEntry, { error: "must be a JSON list of regions" })
      .min(1, "lists no region")
      .max(64, "lists more than 64 regions")
      .safeParse(parsed);
    if (!result.success) {
      for (const issue of result.error.issues) {
        const where = issue.path.length === 0 ? "" : `${describeIssuePath(issue.path)} `;
        ctx.addIssue({ code: "custom", message: `${where}${issue.message}` });
      }
      return [];
    }
    const regions: Region[] = [];
    const seen = new Set<string>();
    result.data.forEach((entry, index) => {
      const at = `entry ${index + 1} (${entry.name})`;
      if (seen.has(entry.name)) {
        ctx.addIssue({ code: "custom", message: `${at} repeats the name of an earlier region` });
      }
      seen.add(entry.name);
      if (entry.sentinels.length > 0 && entry.clusterNodes.length > 0) {
        ctx.addIssue({
          code: "custom",
          message: `${at} sets both "sentinels" and "clusterNodes": a Redis is either behind Sentinel or a Cluster`,
        });
      }
      if (entry.sentinels.length > 0 && entry.sentinelName === undefined) {
        ctx.addIssue({
          code: "custom",
          message: `${at} sets "sentinels" without "sentinelName" (the master group name the sentinels watch)`,
        });
      }
      for (const field of ["sentinelName", "sentinelUsername", "sentinelPassword"] as const) {
        if (entry.sentinels.length === 0 && entry[field] !== undefined) {
          ctx.addIssue({ code: "custom", message: `${at} sets "${field}" without "sentinels"` });
        }
      }
      const redis: RedisTarget = { url: entry.url, clusterNodes: entry.clusterNodes };
      regions.push({
        name: entry.name,
        redis:
          entry.sentinels.length === 0 || entry.sentinelName === undefined
            ? redis
            : {
                ...redis,
                sentinel: {
                  nodes: entry.sentinels,
                  name: entry.sentinelName,
                  username: entry.sentinelUsername,
                  password: entry.sentinelPassword,
                  tls: entry.sentinelTls,
                },
              },
      });
    });
    const shared = new Map<string, string>();
    for (const region of regions) {
      const where = redisLocation(region.redis);
      const other = shared.get(where);
      if (other !== undefined) {
        ctx.addIssue({
          code: "custom",
          message: `regions ${other} and ${region.name} name the same Redis (${where}): each region needs its own`,
        });
      }
      shared.set(where, region.name);
    }
    return regions;
  });

/** Host, port and database a target points at, to refuse two regions sharing one Redis. */
function redisLocation(target: RedisTarget): string {
  const url = new URL(target.url);
  const database = url.pathname.replace(/^\//, "") || "0";
  if (target.sentinel !== undefined) return `sentinel ${target.sentinel.name}/${database}`;
  const first = target.clusterNodes[0];
  if (first !== undefined) return `cluster ${first.host}:${first.port}`;
  return `${url.hostname}:${url.port || "6379"}/${database}`;
}

/** The development secret. Refused when NODE_ENV is production. */
const DEV_SESSION_SECRET = "limitplane-development-secret-do-not-use-in-production";
/** The development key of the traffic record's address hash. */
const DEV_TRAFFIC_RECORD_SECRET = "limitplane-development-traffic-record-key";

export const ZEnv = z
  .object({
    NODE_ENV: z.enum(["development", "production", "test"]).default("development"),
    /** Postgres for the control plane. */
    DATABASE_URL: postgresUrl.default("postgresql://postgres@127.0.0.1:5432/limitplane"),
    /** Redis shared by the control plane and every enforcer. */
    REDIS_URL: redisUrl.default("redis://127.0.0.1:6379/0"),
    /** Prefix of every Redis key and channel, so several installations can share one Redis. */
    REDIS_KEY_PREFIX: z
      .string()
      .regex(/^[A-Za-z0-9:_-]{1,32}$/, "must be 1-32 letters, digits, ':', '_' or '-'")
      .default("lp:"),
    /** Port of the control plane's HTTP server. */
    PORT: port.default(3000),
    /** Signs session cookies. At least 32 characters; required in production. */
    SESSION_SECRET: z
      .string()
      .min(32, "must be at least 32 characters")
      .default(DEV_SESSION_SECRET),
    /**
     * Signs each audit entry's chain hash (lib/control/audit/audit-chain.ts), so a row inserted
     * by whoever holds DATABASE_URL is detected. At least 32 characters; required in production.
     * The console and the worker need the same one.
     */
    AUDIT_KEY: z.string().min(32, "must be at least 32 characters").default(DEV_AUDIT_KEY),
    /** A signed-in session ends this long after sign-in, however active it is. */
    SESSION_LIFETIME_MINUTES: minutes(5, 43_200).default(720),
    /** A session unused for this long ends (measured to the minute). */
    SESSION_IDLE_MINUTES: minutes(5, 43_200).default(120),
    /**
     * Whether the session cookie is `Secure`. `auto`: Secure unless the request is plain http to
     * localhost, 127.0.0.1 or [::1] (local development). `false` only for a trusted plain-http
     * network: browsers then send the session unencrypted.
     */
    COOKIE_SECURE: z
      .enum(["auto", "true", "false"], { error: "must be auto, true or false" })
      .default("auto"),
    /** Postgres connections per process; 1 for the embedded database, which serves one. */
    DATABASE_POOL_SIZE: z.coerce
      .number({ error: "must be a number" })
      .int("must be a whole number")
      .min(1, "must be at least 1")
      .max(100, "must be at most 100")
      .default(10),
    /** Days of per-minute decision counts the worker keeps in Postgres (older rows are deleted). */
    METRICS_RETENTION_DAYS: z.coerce
      .number({ error: "must be a number" })
      .int("must be a whole number of days")
      .min(1, "must be at least 1")
      .max(3650, "must be at most 3650")
      .default(30),
    /**
     * Hours of the traffic record (request by request, for backtests) the worker keeps in
     * Postgres; separate from METRICS_RETENTION_DAYS.
     */
    TRAFFIC_RECORD_RETENTION_HOURS: z.coerce
      .number({ error: "must be a number" })
      .int("must be a whole number of hours")
      .min(1, "must be at least 1")
      .max(8760, "must be at most 8760")
      .default(48),
    /**
     * Keys the hash of client addresses in the traffic record (gateways hash before anything
     * leaves them). At least 16 characters; required in production when gateways record.
     */
    TRAFFIC_RECORD_SECRET: z
      .string()
      .min(16, "must be at least 16 characters")
      .default(DEV_TRAFFIC_RECORD_SECRET),
    /** Fraction of subjects the demo gateway records, in (0, 1]; 0 records nothing. */
    TRAFFIC_RECORD_SAMPLE_RATE: z.coerce
      .number({ error: "must be a number" })
      .min(0, "must be from 0 to 1")
      .max(1, "must be from 0 to 1")
      .default(1),
    /**
     * Where the worker's jobs run: `separate` (the `npm run worker` process, the default) or
     * `in-process` (inside the console, for the embedded one-connection database).
     */
    /**
     * Where the worker POSTs alerts (rejection-rate changes, incident overrides about to expire)
     * as JSON: comma-separated http(s) URLs. Unset: no webhooks.
     */
    ALERT_WEBHOOK_URLS: webhookUrls,
    /**
     * Whether the audit webhook (set in the console) may point at a loopback, private or
     * link-local address: `refuse` (the default, so an admin cannot aim the worker at the
     * machines around it) or `allow` (a receiver on the same network). docs/audit-webhook.md.
     */
    WEBHOOK_PRIVATE_ADDRESSES: z
      .enum(["refuse", "allow"], { error: "must be refuse or allow" })
      .default("refuse"),
    LIMITPLANE_WORKER: z
      .enum(["separate", "in-process"], { error: "must be separate or in-process" })
      .default("separate"),

    // The console's server and the database roles (README "Configuration").
    /** Address the console listens on (`npm start`). `0.0.0.0` or `::` to serve other machines. */
    CONSOLE_HOST: z
      .string()
      .trim()
      .regex(/^[A-Za-z0-9.:_-]{1,253}$/, "must be a host name or an IP address")
      .default("127.0.0.1"),
    /**
     * Proxies in front of the console whose `X-Forwarded-For` and `X-Forwarded-Proto` are
     * believed: 0 (the default) believes neither and uses the connection's own address; n takes
     * the n-th `X-Forwarded-For` entry from the right. Like the gateway's `--trust-proxy`.
     */
    CONSOLE_TRUST_PROXY: z.coerce
      .number({ error: "must be a number of proxies" })
      .int("must be a whole number of proxies")
      .min(0, "must be between 0 and 32")
      .max(32, "must be between 0 and 32")
      .default(0),
    /**
     * A certificate and its key (PEM files) for the console to serve https itself; both or
     * neither. Unset: plain http, for a proxy in front to terminate TLS.
     */
    CONSOLE_TLS_CERT_FILE: z.string().min(1).optional(),
    CONSOLE_TLS_KEY_FILE: z.string().min(1).optional(),
    /**
     * The tables' owner, for migrations (`db:deploy`, `npm run up`, the tests): it creates and
     * grants the application role that DATABASE_URL connects as. Unset: migrations connect with
     * DATABASE_URL, which then owns the tables (one role for everything, not recommended).
     */
    DATABASE_OWNER_URL: postgresUrl.optional(),
    /**
     * A role to switch to (`SET ROLE`) on every new connection, for a database that serves one
     * login (the embedded PGlite of `npm run up`). Unset: the connection's own role.
     */
    DATABASE_ROLE: z
      .string()
      .regex(/^[a-z_][a-z0-9_]{0,62}$/, "must be a role name: lower-case letters, digits and _")
      .optional(),

    // Single sign-on (docs/sso.md) ------------------------------------------------------------
    /**
     * The OpenID Connect provider's issuer (https). Set, the sign-in page offers "Sign in with
     * OIDC_DISPLAY_NAME"; OIDC_CLIENT_ID and OIDC_ROLE_MAP are then required. Unset: no SSO.
     */
    OIDC_ISSUER: z
      .string()
      .trim()
      .refine((value) => URL.canParse(value), { error: "is not a URL", abort: true })
      .refine((value) => new URL(value).protocol === "https:", {
        error: "must be an https:// URL (openid-client refuses a plain-http issuer)",
      })
      .optional(),
    /** The console's client id at the provider. */
    OIDC_CLIENT_ID: z.string().trim().min(1).max(500).optional(),
    /** The client's secret; unset for a public client (PKCE alone). */
    OIDC_CLIENT_SECRET: z.string().min(1).optional(),
    /** The claim whose values OIDC_ROLE_MAP maps to roles. */
    OIDC_ROLE_CLAIM: z
      .string()
      .trim()
      .regex(/^[A-Za-z0-9_:./-]{1,100}$/, "must be a claim name (letters, digits, _ : . / -)")
      .default("groups"),
    /** `value=role` pairs, comma-separated: `lp-admins=admin,lp-sre=operator,staff=viewer`. */
    OIDC_ROLE_MAP: z
      .string()
      .optional()
      .transform((value, ctx): readonly RoleGrant[] | undefined => {
        if (value === undefined) return undefined;
        const parsed = parseRoleMap(value);
        if (!parsed.ok) {
          ctx.addIssue({ code: "custom", message: parsed.message });
          return z.NEVER;
        }
        return parsed.grants;
      }),
    /** The provider's name on the sign-in button. */
    OIDC_DISPLAY_NAME: z.string().trim().min(1).max(60).default("single sign-on"),
    /** A PEM file of the CA that signed the provider's certificate, when not a public one. */
    OIDC_CA_FILE: z.string().min(1).optional(),
    /** How often a session's role is confirmed at the provider, in minutes (docs/sso.md). */
    OIDC_RECHECK_MINUTES: z.coerce
      .number({ error: "must be a number of minutes" })
      .int({ error: "must be a whole number of minutes" })
      .min(1, { error: "must be at least 1" })
      .max(60, { error: "must be at most 60 (sessions last hours; a role must not)" })
      .default(5),
    /** What an unreachable provider does to a session left unconfirmed for two intervals. */
    OIDC_RECHECK_OUTAGE: z
      .enum(["end-session", "keep-session"], { error: "must be end-session or keep-session" })
      .default("end-session"),
    /** `off` refuses password sign-in but for BREAK_GLASS_ADMINS; needs OIDC_ISSUER. */
    PASSWORD_SIGN_IN: z.enum(["on", "off"], { error: "must be on or off" }).default("on"),
    /**
     * Admins' emails (comma-separated) who may sign in with a password while PASSWORD_SIGN_IN is
     * off, for when the provider is down; each such sign-in is audited and logged as a warning.
     */
    BREAK_GLASS_ADMINS: z
      .string()
      .default("")
      .transform((value) =>
        value
          .split(",")
          .map((entry) => entry.trim().toLowerCase())
          .filter((entry) => entry !== ""),
      ),

    // Redis Cluster ------------------------------------------------------------------------
    /**
     * Seed nodes of a Redis Cluster (`host:port,host:port`). Set, the console, the worker and
     * every enforcer use an ioredis Cluster client on them, and REDIS_URL only says how to talk
     * to the nodes: `rediss://` for TLS, its username and password for every node; its host,
     * port and database are then not used. Unset: one Redis at REDIS_URL.
     */
    REDIS_CLUSTER_NODES: hostPortList("10.0.0.1:7000,10.0.0.2:7000"),

    // Regions (docs/regions.md) ----------------------------------------------------------------
    /**
     * The installation's regions, each with its own Redis (a JSON list, see `ZRegionEntry`).
     * Set, the worker publishes every change to every region and reads every region's reports,
     * and REDIS_URL, REDIS_CLUSTER_NODES and REDIS_SENTINELS are not used. Unset: one Redis.
     */
    REGIONS: regionList,
    /**
     * The region this process runs in: gateways and the rate-limit service decide against its
     * Redis only. Must name an entry of REGIONS. Unset with REGIONS set: the first region.
     */
    REGION: z
      .string()
      .regex(REGION_NAME, {
        error: "must be 1-32 lower-case letters, digits or '-', starting with a letter",
      })
      .optional(),

    // Global budgets (docs/regions.md, "Global budgets") --------------------------------------
    /** How often the worker divides each global limit among the regions by their demand. */
    GLOBAL_BUDGET_INTERVAL_MS: msSetting(100, 60_000, 1_000),
    /** How long a region's share stays in force without being renewed (then its floor). */
    GLOBAL_BUDGET_LEASE_MS: msSetting(200, 600_000, 3_000),
    /** Most the worker's clock and a region's Redis clock may disagree by. */
    GLOBAL_BUDGET_SKEW_MS: msSetting(0, 60_000, 100),
    /**
     * How long the worker waits after writing the decreases before it writes the increases: the
     * longest an enforcer takes to apply a share written to its Redis (its 100 ms poll plus two
     * reads' round trips and the event loop's delay).
     */
    GLOBAL_BUDGET_APPLY_MS: msSetting(0, 60_000, 300),
    /** The share a region falls back to when its lease ends, and the least one that answers gets. */
    GLOBAL_BUDGET_FLOOR_SHARE: z.coerce
      .number({ error: "must be a number" })
      .min(0, "must be at least 0")
      .max(1, "must be at most 1")
      .default(0.02),

    // Redis Sentinel (docs/failover.md) -------------------------------------------------------
    /**
     * Sentinels watching the Redis primary (`host:port,host:port`). Set, the console, the worker
     * and every enforcer ask them where the primary of REDIS_SENTINEL_NAME is and follow a
     * failover by themselves; REDIS_URL then says how to talk to the primary (`rediss://` for TLS,
     * its username, password and database); its host and port are not used. Unset: no Sentinel.
     */
    REDIS_SENTINELS: hostPortList("10.0.0.1:26379,10.0.0.2:26379,10.0.0.3:26379"),
    /** The master group name the sentinels watch (`sentinel monitor <name> ...`). */
    REDIS_SENTINEL_NAME: z
      .string()
      .trim()
      .regex(/^[A-Za-z0-9._-]{1,64}$/, "must be 1-64 letters, digits, '.', '_' or '-'")
      .optional(),
    /** ACL user of the sentinels themselves (the primary's is REDIS_URL's). Unset: none. */
    REDIS_SENTINEL_USERNAME: z.string().min(1).optional(),
    /** Password of the sentinels themselves (`requirepass` in sentinel.conf). Unset: none. */
    REDIS_SENTINEL_PASSWORD: z.string().min(1).optional(),
    /** TLS to the sentinels themselves (TLS to the primary follows REDIS_URL's `rediss://`). */
    REDIS_SENTINEL_TLS: z
      .enum(["true", "false"], { error: "must be true or false" })
      .default("false")
      .transform((value) => value === "true"),
  })
  .superRefine((env, ctx) => {
    if ((env.CONSOLE_TLS_CERT_FILE === undefined) !== (env.CONSOLE_TLS_KEY_FILE === undefined)) {
      ctx.addIssue({
        code: "custom",
        path: [
          env.CONSOLE_TLS_CERT_FILE === undefined
            ? "CONSOLE_TLS_CERT_FILE"
            : "CONSOLE_TLS_KEY_FILE",
        ],
        message: "must be set too: the console's TLS needs both a certificate and its key",
      });
    }
    if (env.REDIS_CLUSTER_NODES.length > 0) {
      const database = new URL(env.REDIS_URL).pathname.replace(/^\//, "");
      if (database !== "" && database !== "0") {
        ctx.addIssue({
          code: "custom",
          path: ["REDIS_URL"],
          message: `selects database ${database}, but REDIS_CLUSTER_NODES is set and a Redis Cluster has database 0 only`,
        });
      }
    }
    checkSentinelSettings(env, ctx);
    checkSsoSettings(env, ctx);
    checkRegionSettings(env, ctx);
    checkGlobalBudgetSettings(env, ctx);
    if (env.NODE_ENV === "production" && env.SESSION_SECRET === DEV_SESSION_SECRET) {
      ctx.addIssue({
        code: "custom",
        path: ["SESSION_SECRET"],
        message: "must be set in production (the development default is public)",
      });
    }
    if (env.NODE_ENV === "production" && env.AUDIT_KEY === DEV_AUDIT_KEY) {
      ctx.addIssue({
        code: "custom",
        path: ["AUDIT_KEY"],
        message:
          "must be set in production (the development default is public, so anyone could sign forged audit entries)",
      });
    }
  });

export type Env = z.infer<typeof ZEnv>;

/** The Sentinel variables belong together, and not with a Cluster. */
function checkSentinelSettings(
  env: {
    REDIS_SENTINELS: readonly unknown[];
    REDIS_SENTINEL_NAME?: string;
    REDIS_SENTINEL_USERNAME?: string;
    REDIS_SENTINEL_PASSWORD?: string;
    REDIS_CLUSTER_NODES: readonly unknown[];
  },
  ctx: z.RefinementCtx,
): void {
  const hasSentinels = env.REDIS_SENTINELS.length > 0;
  if (hasSentinels && env.REDIS_CLUSTER_NODES.length > 0) {
    ctx.addIssue({
      code: "custom",
      path: ["REDIS_SENTINELS"],
      message:
        "is set together with REDIS_CLUSTER_NODES: a Redis is either behind Sentinel or a Cluster, set one",
    });
  }
  if (hasSentinels && env.REDIS_SENTINEL_NAME === undefined) {
    ctx.addIssue({
      code: "custom",
      path: ["REDIS_SENTINEL_NAME"],
      message:
        "must be set with REDIS_SENTINELS: the master group name the sentinels watch (sentinel monitor <name> ...)",
    });
  }
  for (const variable of [
    "REDIS_SENTINEL_NAME",
    "REDIS_SENTINEL_USERNAME",
    "REDIS_SENTINEL_PASSWORD",
  ] as const) {
    if (!hasSentinels && env[variable] !== undefined) {
      ctx.addIssue({
        code: "custom",
        path: [variable],
        message: "is set but REDIS_SENTINELS is not: list the sentinels, or unset it",
      });
    }
  }
}

/** The SSO variables belong together; password sign-in may be off only with a provider. */
function checkSsoSettings(
  env: {
    OIDC_ISSUER?: string;
    OIDC_CLIENT_ID?: string;
    OIDC_CLIENT_SECRET?: string;
    OIDC_ROLE_MAP?: readonly RoleGrant[];
    PASSWORD_SIGN_IN: "on" | "off";
  },
  ctx: z.RefinementCtx,
): void {
  if (env.OIDC_ISSUER !== undefined) {
    for (const variable of ["OIDC_CLIENT_ID", "OIDC_ROLE_MAP"] as const) {
      if (env[variable] === undefined) {
        ctx.addIssue({
          code: "custom",
          path: [variable],
          message: "must be set with OIDC_ISSUER (docs/sso.md)",
        });
      }
    }
  } else {
    for (const variable of ["OIDC_CLIENT_ID", "OIDC_CLIENT_SECRET", "OIDC_ROLE_MAP"] as const) {
      if (env[variable] !== undefined) {
        ctx.addIssue({
          code: "custom",
          path: [variable],
          message: "is set but OIDC_ISSUER is not: name the provider, or unset it",
        });
      }
    }
    if (env.PASSWORD_SIGN_IN === "off") {
      ctx.addIssue({
        code: "custom",
        path: ["PASSWORD_SIGN_IN"],
        message: "is off but OIDC_ISSUER is not set: nobody could sign in",
      });
    }
  }
}

/** A duration in ms from `min` to `max`, `fallback` when unset. */
function msSetting(min: number, max: number, fallback: number) {
  return z.coerce
    .number({ error: "must be a number" })
    .int("must be a whole number of ms")
    .min(min, `must be at least ${min}`)
    .max(max, `must be at most ${max}`)
    .default(fallback);
}

/**
 * A lease must outlast a round and its apply wait, or every region falls to its floor between
 * rounds; the floors of all regions must fit in the limit.
 */
function checkGlobalBudgetSettings(
  env: {
    REGIONS: readonly Region[];
    GLOBAL_BUDGET_INTERVAL_MS: number;
    GLOBAL_BUDGET_LEASE_MS: number;
    GLOBAL_BUDGET_APPLY_MS: number;
    GLOBAL_BUDGET_FLOOR_SHARE: number;
  },
  ctx: z.RefinementCtx,
): void {
  // Two writes of one region's share can be I + I / 2 (a round waiting on an unreachable
  // region) + A apart when the rounds run on time; I / 2 more is the margin for a late round.
  const leastLeaseMs = 2 * env.GLOBAL_BUDGET_INTERVAL_MS + env.GLOBAL_BUDGET_APPLY_MS;
  if (env.GLOBAL_BUDGET_LEASE_MS <= leastLeaseMs) {
    ctx.addIssue({
      code: "custom",
      path: ["GLOBAL_BUDGET_LEASE_MS"],
      message: `must be more than twice GLOBAL_BUDGET_INTERVAL_MS plus GLOBAL_BUDGET_APPLY_MS (${leastLeaseMs})`,
    });
  }
  const regionCount = Math.max(1, env.REGIONS.length);
  if (env.GLOBAL_BUDGET_FLOOR_SHARE * regionCount > 1) {
    ctx.addIssue({
      code: "custom",
      path: ["GLOBAL_BUDGET_FLOOR_SHARE"],
      message: `must be at most 1 / ${regionCount} (the regions in REGIONS)`,
    });
  }
}

/** REGIONS replaces the single-Redis variables, and REGION must name one of them. */
function checkRegionSettings(
  env: {
    REGIONS: readonly Region[];
    REGION?: string;
    REDIS_CLUSTER_NODES: readonly unknown[];
    REDIS_SENTINELS: readonly unknown[];
  },
  ctx: z.RefinementCtx,
): void {
  const hasRegions = env.REGIONS.length > 0;
  for (const variable of ["REDIS_CLUSTER_NODES", "REDIS_SENTINELS"] as const) {
    if (hasRegions && env[variable].length > 0) {
      ctx.addIssue({
        code: "custom",
        path: [variable],
        message: "is set together with REGIONS: give each region's Redis in its REGIONS entry",
      });
    }
  }
  if (env.REGION === undefined) return;
  if (!hasRegions) {
    ctx.addIssue({
      code: "custom",
      path: ["REGION"],
      message: "is set but REGIONS is not: list the regions, or unset it",
    });
  } else if (!env.REGIONS.some((region) => region.name === env.REGION)) {
    ctx.addIssue({
      code: "custom",
      path: ["REGION"],
      message: `is not one of the regions in REGIONS (${env.REGIONS.map((region) => region.name).join(", ")})`,
    });
  }
}

/** The configured regions; empty for a one-Redis installation. */
export function regionsOf(env: Env): readonly Region[] {
  return env.REGIONS;
}

/**
 * Where this process's Redis is, as `createRedisClient` and the enforcer take it: a Cluster,
 * a Sentinel deployment, or one Redis at REDIS_URL; with REGIONS, the Redis of REGION (the first
 * region when unset). Every process reads it here.
 */
export function redisTargetOf(env: Env): RedisTarget {
  if (env.REGIONS.length > 0) {
    const region = env.REGIONS.find((entry) => entry.name === env.REGION) ?? env.REGIONS[0];
    if (region !== undefined) return region.redis;
  }
  const target = { url: env.REDIS_URL, clusterNodes: env.REDIS_CLUSTER_NODES };
  if (env.REDIS_SENTINELS.length === 0 || env.REDIS_SENTINEL_NAME === undefined) return target;
  return {
    ...target,
    sentinel: {
      nodes: env.REDIS_SENTINELS,
      name: env.REDIS_SENTINEL_NAME,
      username: env.REDIS_SENTINEL_USERNAME,
      password: env.REDIS_SENTINEL_PASSWORD,
      tls: env.REDIS_SENTINEL_TLS,
    },
  };
}

/** Raised by `loadEnv`; its message is the single line to print. */
export class EnvError extends Error {
  override name = "EnvError";
}

/**
 * Turns zod issues into one line per problem:
 * `Invalid configuration: DATABASE_URL is not a URL (got "foo")`.
 */
export function formatEnvError(
  error: z.ZodError,
  source: Record<string, string | undefined>,
): string {
  const lines = error.issues.map((issue) => {
    const variable = String(issue.path[0] ?? "environment");
    const raw = source[variable];
    const shown = raw === undefined ? "" : ` (got ${JSON.stringify(redact(variable, raw))})`;
    return `Invalid configuration: ${variable} ${issue.message}${shown}`;
  });
  return lines.join("\n");
}

/**
 * A gateway that keeps the traffic record hashes client addresses with TRAFFIC_RECORD_SECRET. In
 * production the public development key is refused: addresses hashed with a key anyone can read
 * can be recovered by trying every address. Throws `EnvError` with one line.
 */
export function requireTrafficRecordSecret(env: Env): string {
  if (env.NODE_ENV === "production" && env.TRAFFIC_RECORD_SECRET === DEV_TRAFFIC_RECORD_SECRET) {
    throw new EnvError(
      "Invalid configuration: TRAFFIC_RECORD_SECRET must be set in production to keep the traffic record (the development default is public, so the recorded address hashes could be reversed)",
    );
  }
  return env.TRAFFIC_RECORD_SECRET;
}

/** Never echo a password or secret back into a log line. */
function redact(variable: string, raw: string): string {
  if (/SECRET|PASSWORD|_KEY$|WEBHOOK|^REGIONS$/.test(variable)) return "<hidden>";
  if (!URL.canParse(raw)) return raw.length > 80 ? `${raw.slice(0, 80)}…` : raw;
  const url = new URL(raw);
  if (url.password !== "") url.password = "***";
  return url.toString();
}

/** Parses `source` (default `process.env`). Throws `EnvError` with one readable line. */
export function parseEnv(source: Record<string, string | undefined> = process.env): Env {
  // Treat empty strings as unset so `FOO= npm start` falls back to the default.
  const cleaned = Object.fromEntries(Object.entries(source).filter(([, value]) => value !== ""));
  const result = ZEnv.safeParse(cleaned);
  if (!result.success) throw new EnvError(formatEnvError(result.error, source));
  return result.data;
}

let cached: Env | undefined;

/** The process's configuration, parsed on first use. */
export function loadEnv(): Env {
  cached ??= parseEnv();
  return cached;
}
