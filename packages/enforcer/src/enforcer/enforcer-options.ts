/**
 * What `createEnforcer` takes, grouped by concern, and the checks it makes before opening
 * anything: a mistake in the options is an {@link EnforcerOptionsError} listing every field that
 * is wrong, never a gateway that starts and limits nothing.
 *
 * Limits come from one of two places. Written in code (`policy`, the control plane's policy
 * document schema): compiled at start into a snapshot that is the enforcer's bootstrap snapshot,
 * in force from the first request, and the published policy is not followed. Or published by the
 * control plane under `redis.keyPrefix` and followed (`controlPlane`), with an optional
 * `bootstrapSnapshot` to enforce until Redis provides a newer one.
 */
import type { Clock } from "../limiter/clock";
import type { Timers } from "../limiter/timers";
import type { LimiterStore } from "../limiter/types";
import { formatFieldPath, type PolicyFieldError } from "../policy/errors";
import type { TPolicyDocumentInput, TSnapshot } from "../policy/schemas";
import { parsePolicyDocument } from "../policy/schemas";
import { compileSnapshot } from "../policy/snapshot";
import type {
  RedisClient,
  RedisClusterNode,
  RedisSentinelOptions,
} from "../publication/redis-clients";
import type { TrafficRecordingOptions } from "../recording/traffic-recorder";
import type { CircuitBreakerOptions } from "./circuit-breaker";
import type { DecisionMetricsOptions } from "./decision-metrics";
import type { LeaseOptions } from "./lease-table";
import type { LocalStageOptions } from "./local-stage";
import type { EnforcerLogger } from "./logger";
import type { RecentRejectionsOptions } from "./recent-rejections";
import type { SeenCustomersOptions } from "./seen-customers";

/**
 * The Redis connections an enforcer uses, one per role (`createRedisClient` in the package's
 * `/publication` entry makes them with the timeouts each role needs).
 */
export interface EnforcerClients {
  /**
   * The hot path: fails at once when disconnected, so the failure policy decides. Its command
   * timeout must exceed `timeouts.maxWaitMs`, or a slow call is given up by the client before the
   * enforcer stops waiting for it.
   */
  readonly decisions: RedisClient;
  /** Snapshot reads, heartbeats, metrics. */
  readonly control: RedisClient;
  /** Policy announcements. */
  readonly subscriber: RedisClient;
  /**
   * Decisions of limits with `durability: "replicated"`, each call followed by `WAIT 1`: a
   * connection of its own, since WAIT blocks it (on a Cluster, a Cluster client of its own:
   * each call and its WAIT go to the slot's master). Opened by the enforcer when it opens the
   * others; without it such decisions are left to their failure policy.
   */
  readonly replicated?: RedisClient;
}

/** Where the shared state is: `url` (or `clients`), and the key prefix. */
export interface EnforcerRedisOptions {
  /**
   * The shared Redis, as a `redis://` or `rediss://` URL: the enforcer opens its three connections
   * and closes them on `stop()`. Give this or `clients`, not both.
   */
  readonly url?: string;
  /**
   * Seed nodes of a Redis Cluster: the three connections are then ioredis `Cluster` clients, and
   * `url` says only how to reach the nodes (`rediss://` for TLS, its username and password for
   * every node); its host, port and database are not used.
   * @default none: one Redis at `url`
   */
  readonly clusterNodes?: readonly RedisClusterNode[];
  /**
   * A Redis behind Sentinel: the connections go to the primary the sentinels name for
   * `sentinel.name`, and move to a promoted replica by themselves (docs/failover.md). `url` then
   * says how to reach the primary (`rediss://` for TLS, its username, password and database); its
   * host and port are not used. Not with `clusterNodes`.
   * @default none: one Redis at `url`
   */
  readonly sentinel?: RedisSentinelOptions;
  /**
   * Connections you made and own (the enforcer never closes them). The `decisions` one should
   * fail fast (no offline queue), as `createRedisClient("decisions", ...)` makes it.
   * @default none: opened from `url`
   */
  readonly clients?: EnforcerClients;
  /**
   * Prefix of every key and channel. With a control plane, its `REDIS_KEY_PREFIX`; with limits in
   * code, any prefix of this application's own.
   * @default "lp:"
   */
  readonly keyPrefix?: string;
  /**
   * Decisions the default RedisStore sends in one script call when they arrive in the same
   * event-loop turn (each is still one layered decision, atomic; see `RedisStoreOptions`). On
   * Redis Cluster the batches are per hash slot.
   * @default 64
   */
  readonly batchSize?: number;
}

/** How long a decision waits for Redis, and what answers while Redis does not. */
export interface EnforcerTimeoutOptions {
  /**
   * How long a store call may go unanswered before the enforcer looks at the connection: down,
   * and each limit's failure policy answers at once; up, and the call is only slow, so it is
   * waited for (up to `maxWaitMs`). See docs/embedding.md ("When Redis fails").
   * @default 50
   */
  readonly storeCallMs?: number;
  /**
   * The longest one decision waits for a Redis that is connected but slow (a busy host), in all,
   * before its failure policy answers. A busy gateway serves slower; it never serves unlimited.
   * At least `storeCallMs`, at most 60 000.
   * @default 1_000 (or `storeCallMs`, if longer)
   */
  readonly maxWaitMs?: number;
  /** @default 5 consecutive failures or >= 50 % of >= 20 calls in 10 s open it; 2 s cool-down */
  readonly breaker?: Omit<CircuitBreakerOptions, "clock">;
  /** Least `Retry-After` a `closed` limit tells while Redis is down. @default 1_000 */
  readonly closedRetryAfterMs?: number;
}

/** Following the policy the control plane publishes (not used with `policy` in code). */
export interface EnforcerControlPlaneOptions {
  /**
   * A compiled snapshot (`compileSnapshot` of `@limitplane/enforcer/policy`) to enforce until
   * Redis provides a newer one, so a gateway that starts while Redis is unreachable enforces a
   * known policy from its first request.
   * @default none
   */
  readonly bootstrapSnapshot?: TSnapshot | string;
  /**
   * How often the stored policy version is checked, healing missed announcements.
   * @default 2_000
   */
  readonly pollIntervalMs?: number;
  /**
   * How long `createEnforcer` waits for a first snapshot before returning (plus at most the
   * control connection's command timeout, 1 s, if Redis is unreachable).
   * @default 5_000
   */
  readonly startupWaitMs?: number;
  /**
   * What a request gets while no snapshot is in force (Redis holds none under this key prefix,
   * or the first one has not arrived): `admit` lets it through unchecked (`source: "no-policy"`);
   * `reject` answers 503 `LIMITER_UNAVAILABLE` with a `Retry-After` of 1 s. Either way the
   * heartbeat says the enforcer runs no policy, so the console's fleet, /status and the alert
   * webhooks say so too. Admit is the default because a gateway that cannot find its limits
   * should not take the API down with it; choose reject where unlimited traffic is worse than
   * none, or give a `bootstrapSnapshot` or a `policyCache` to enforce known limits meanwhile.
   * @default "admit"
   */
  readonly withoutPolicy?: "admit" | "reject";
  /**
   * Keep the last good policy on disk: after each version applied, the policy in force is written
   * to `path` (atomically: a temporary file, fsync, rename; at most once every `saveIntervalMs`,
   * always the newest; a refused policy is never written). At start, when Redis gives no policy
   * within `startupWaitMs` (unreachable, or none published under this key prefix), the file is
   * loaded and enforced: status, heartbeat and logs say `policy: cached (version N, saved at T)`,
   * and the first good policy Redis provides replaces it, whatever its version. A file that is
   * unreadable, not a file, truncated, altered, of another release or saved for another key
   * prefix is refused with one error line naming the path and the problem, and `withoutPolicy`
   * applies. The directory must exist. Not with `policy` in code or a `bootstrapSnapshot`.
   * docs/embedding.md ("The last good policy on disk").
   * @default none: nothing is written or read
   */
  readonly policyCache?: {
    /** The file: one per key prefix and gateway (two gateways may share it; the last save wins). */
    readonly path: string;
    /** @default 5_000 */
    readonly saveIntervalMs?: number;
  };
}

/** The in-process memos of the policy in force, per snapshot. */
export interface EnforcerCacheOptions {
  /**
   * Customers with overrides whose prepared rules are cached per generation: at most twice this
   * many are held; the others' overrides are kept compact and prepared when one of their
   * requests arrives (a few microseconds).
   * @default 10_000
   */
  readonly preparedCustomers?: number;
  /**
   * Resolutions of customers without overrides (one per customer, tier and route seen while one
   * snapshot is in force).
   * @default 10_000
   */
  readonly resolutions?: number;
}

/** What the enforcer writes to Redis about itself for the console: heartbeats, counts, lists. */
export interface EnforcerReportingOptions {
  /** @default 1_000 */
  readonly heartbeatIntervalMs?: number;
  /** How long the heartbeat hash outlives its last beat. @default 10_000 */
  readonly heartbeatTtlMs?: number;
  /** @default 1_000 */
  readonly metricsFlushIntervalMs?: number;
  /** Lifetime of the per-second metrics hashes. @default 10_800_000 (3 h) */
  readonly secondBucketTtlMs?: number;
  /** Lifetime of the per-minute metrics hashes the worker rolls up. @default 21_600_000 (6 h) */
  readonly minuteBucketTtlMs?: number;
  /** Rejections kept per customer in Redis. @default 50 */
  readonly rejectionsPerCustomer?: number;
  /**
   * Lifetime of a customer's rejection list after its latest rejection.
   * @default 3_600_000 (1 h)
   */
  readonly rejectionsTtlMs?: number;
  /** The in-process counts behind the metrics. @default {} */
  readonly metrics?: Omit<DecisionMetricsOptions, "wallClock">;
  /** In-process record feeding the Redis lists. @default {} */
  readonly recentRejections?: Omit<RecentRejectionsOptions, "clock" | "wallClock">;
  /**
   * Reporting the identified customers this gateway sees (and their tiers) for the console,
   * bounded per hour, or false.
   * @default {}: at most 1 000 customers an hour
   */
  readonly seenCustomers?: SeenCustomersOptions | false;
}

/** Where time comes from: tests pass manual clocks and timers. */
export interface EnforcerTimeOptions {
  /** Durations (timeouts, breaker, leases, local quotas). @default monotonicClock */
  readonly clock?: Clock;
  /** Incident expiry, metrics buckets, rejection times. @default Date.now */
  readonly wallClock?: Clock;
  /** @default systemTimers */
  readonly timers?: Timers;
}

export interface EnforcerOptions {
  /**
   * How many gateways share the traffic. Divides every `local` limit while Redis is unreachable
   * (each gateway then admits its share). No default: too high rejects customers for our outage,
   * too low multiplies the limit.
   */
  readonly expectedGateways: number;
  /**
   * The limits, written in code, in the schema of the control plane's policy document
   * (`TPolicyDocumentInput` of `@limitplane/enforcer/policy`; the model is described in
   * src/policy/README.md). Validated and compiled at start (a mistake throws
   * {@link EnforcerOptionsError} naming the field), then enforced from the first request as
   * version 1, with the same decisions, headers and metrics as a published policy. The enforcer
   * then follows no published policy.
   * @default none: follow the policy the control plane publishes under `redis.keyPrefix`
   */
  readonly policy?: TPolicyDocumentInput;
  /** The shared Redis. */
  readonly redis: EnforcerRedisOptions;
  /**
   * The shared store, made from the `decisions` client. Pass a `MemoryStore` (from `/limiter`) to
   * run one gateway without shared state (tests, local development).
   * @default a RedisStore on the `decisions` client (one Lua script per layered decision)
   */
  readonly store?: (clients: EnforcerClients, keyPrefix: string) => LimiterStore;
  /** @default see each field */
  readonly timeouts?: EnforcerTimeoutOptions;
  /**
   * Leases: a busy subject's budget reserved in Redis in slices for this gateway, spent here
   * without a Redis call, never beyond the limit, and given back when not spent
   * (docs/redis-store.md, "Leases"), or false to ask Redis for every admission. Only with the
   * default RedisStore (or a store that leases).
   * @default {}: at most 1 000 units and 1 s a lease, 10 000 subjects, a 60 s loss bound
   */
  readonly leases?: Omit<LeaseOptions, "clock" | "timers" | "returner" | "keepsStoreTime"> | false;
  /**
   * Global limits (docs/regions.md, "Global budgets"): a policy limit marked `global` is decided
   * at the share of it the control plane's reconciler gives this Redis's region, read every
   * `pollIntervalMs` with the demand counted since written in the same pipeline. Only when
   * following the control plane.
   * @default {}
   */
  readonly globalBudgets?: EnforcerGlobalBudgetOptions;
  /**
   * The local first stage (a cache of recent shared rejections and a generous in-process flood
   * guard), or false to ask Redis for every request. It only ever rejects, so it never admits
   * more than the shared limit.
   * @default {}
   */
  readonly local?: LocalStageOptions | false;
  /** @default see each field */
  readonly controlPlane?: EnforcerControlPlaneOptions;
  /** @default see each field */
  readonly caches?: EnforcerCacheOptions;
  /** @default see each field */
  readonly reporting?: EnforcerReportingOptions;
  /**
   * Record every decision for backtests (`@limitplane/enforcer/recording`): appended to a bounded
   * buffer on the decision path, written to this gateway's Redis Stream on a timer.
   * @default none (nothing recorded)
   */
  readonly recording?: TrafficRecordingOptions;
  /**
   * This enforcer's name in heartbeats, logs and metrics; unique per process.
   * @default `<hostname>-<pid>-<4 random hex bytes>`
   */
  readonly enforcerId?: string;
  /** @default JSON lines on stderr */
  readonly logger?: EnforcerLogger;
  /** @default the process's clocks and timers */
  readonly time?: EnforcerTimeOptions;
}

/**
 * `createEnforcer` was given options it cannot run with. `errors` lists every problem found, each
 * with its field (`redis.url`, `policy.tiers[0].limit.capacity`); the message has one line each.
 * Thrown before any connection is opened.
 */
export class EnforcerOptionsError extends TypeError {
  override name = "EnforcerOptionsError";
  readonly errors: readonly PolicyFieldError[];

  constructor(errors: readonly PolicyFieldError[], options?: { cause?: unknown }) {
    const lines = errors.map((error) =>
      error.path.length === 0 ? error.message : `${formatFieldPath(error.path)}: ${error.message}`,
    );
    super(`createEnforcer: invalid options\n${lines.join("\n")}`, options);
    this.errors = errors;
  }
}

/**
 * Checks `options` and chooses the snapshot to start from: `policy` compiled (version 1, at
 * `nowMs`), else `controlPlane.bootstrapSnapshot`, else none. Throws {@link EnforcerOptionsError}
 * with every problem found.
 */
export function checkEnforcerOptions(
  options: EnforcerOptions,
  nowMs: number,
): TSnapshot | string | undefined {
  const errors: PolicyFieldError[] = [];
  const add = (path: PolicyFieldError["path"], message: string) => errors.push({ path, message });
  const given = options as Partial<EnforcerOptions> | undefined;
  if (given === undefined || given === null || typeof given !== "object") {
    throw new EnforcerOptionsError([{ path: [], message: "options are required" }]);
  }
  const { expectedGateways, redis } = given;
  if (!(Number.isInteger(expectedGateways) && (expectedGateways ?? 0) >= 1)) {
    add(
      ["expectedGateways"],
      `must be a whole number >= 1 (how many gateways share the traffic), got ${String(expectedGateways)}`,
    );
  }
  if (redis === undefined || redis === null || typeof redis !== "object") {
    add(["redis"], "is required: { url } of the shared Redis, or { clients }");
  } else if ((redis.url === undefined) === (redis.clients === undefined)) {
    add(["redis"], "give either url or clients (exactly one)");
  } else if (redis.url !== undefined) {
    const problem = redisUrlProblem(redis.url);
    if (problem !== null) add(["redis", "url"], problem);
    if (redis.sentinel !== undefined) {
      if ((redis.clusterNodes?.length ?? 0) > 0) {
        add(["redis", "sentinel"], "give clusterNodes or sentinel, not both");
      }
      for (const [field, message] of sentinelProblems(redis.sentinel)) {
        add(["redis", "sentinel", ...field], message);
      }
    }
  }
  if (given.policy !== undefined && given.controlPlane?.bootstrapSnapshot !== undefined) {
    add(
      ["controlPlane", "bootstrapSnapshot"],
      "give policy (limits in code) or a bootstrap snapshot, not both",
    );
  }
  for (const [field, message] of policyCacheProblems(given.controlPlane?.policyCache)) {
    add(["controlPlane", "policyCache", ...field], message);
  }
  if (given.controlPlane?.policyCache !== undefined) {
    if (given.policy !== undefined) {
      add(
        ["controlPlane", "policyCache"],
        "give policy (limits in code) or a policy cache, not both: limits in code need no cache",
      );
    }
    if (given.controlPlane.bootstrapSnapshot !== undefined) {
      add(
        ["controlPlane", "policyCache"],
        "give a bootstrap snapshot or a policy cache, not both: each is what runs until Redis answers",
      );
    }
  }
  const withoutPolicy: unknown = given.controlPlane?.withoutPolicy;
  if (withoutPolicy !== undefined && withoutPolicy !== "admit" && withoutPolicy !== "reject") {
    add(
      ["controlPlane", "withoutPolicy"],
      `must be "admit" or "reject" (what a request gets while no policy is in force), got ${JSON.stringify(withoutPolicy)}`,
    );
  }
  let snapshot: TSnapshot | string | undefined = given.controlPlane?.bootstrapSnapshot;
  if (given.policy !== undefined) {
    const parsed = parsePolicyDocument(given.policy);
    if (parsed.ok) {
      snapshot = compileSnapshot(parsed.value, {
        version: 1,
        compiledAt: new Date(nowMs).toISOString(),
      });
    } else {
      for (const error of parsed.errors) add(["policy", ...error.path], error.message);
    }
  }
  const global = given.globalBudgets;
  if (global !== undefined) {
    const poll = global.pollIntervalMs;
    if (poll !== undefined && !(Number.isInteger(poll) && poll >= 10 && poll <= 60_000)) {
      add(
        ["globalBudgets", "pollIntervalMs"],
        `must be a whole number of ms from 10 to 60000, got ${JSON.stringify(poll)}`,
      );
    }
    const floor = global.floorShare;
    if (floor !== undefined && !(typeof floor === "number" && floor >= 0 && floor <= 1)) {
      add(
        ["globalBudgets", "floorShare"],
        `must be a number from 0 to 1, got ${JSON.stringify(floor)}`,
      );
    }
  }
  if (errors.length > 0) throw new EnforcerOptionsError(errors);
  return snapshot;
}

/** What is wrong with `controlPlane.policyCache`, field by field (none when it can be used). */
function policyCacheProblems(cache: unknown): [string[], string][] {
  if (cache === undefined) return [];
  if (cache === null || typeof cache !== "object" || Array.isArray(cache)) {
    return [[[], "must be { path } of the file the last good policy is kept in"]];
  }
  const given = cache as Record<string, unknown>;
  const problems: [string[], string][] = [];
  if (typeof given.path !== "string" || given.path.trim() === "") {
    problems.push([["path"], "must be a file path (a non-empty string)"]);
  } else if (given.path.includes("\0")) {
    problems.push([["path"], "must not contain a NUL character"]);
  }
  const interval = given.saveIntervalMs;
  if (
    interval !== undefined &&
    !(Number.isInteger(interval) && Number(interval) >= 0 && Number(interval) <= 3_600_000)
  ) {
    problems.push([
      ["saveIntervalMs"],
      `must be a whole number of ms from 0 to 3600000, got ${JSON.stringify(interval)}`,
    ]);
  }
  for (const key of Object.keys(given)) {
    if (key !== "path" && key !== "saveIntervalMs") {
      problems.push([[key], "is not an option of policyCache (path, saveIntervalMs)"]);
    }
  }
  return problems;
}

/** What is wrong with a Sentinel option, field by field (none when it can be used). */
function sentinelProblems(sentinel: unknown): [(string | number)[], string][] {
  if (sentinel === null || typeof sentinel !== "object") {
    return [[[], "must be { nodes, name } of the sentinels and the master group they watch"]];
  }
  const given = sentinel as Partial<Record<keyof RedisSentinelOptions, unknown>>;
  const problems: [(string | number)[], string][] = [];
  if (!Array.isArray(given.nodes) || given.nodes.length === 0) {
    problems.push([["nodes"], "must list at least one sentinel as { host, port }"]);
  } else {
    given.nodes.forEach((node: unknown, index: number) => {
      const { host, port } = (node ?? {}) as { host?: unknown; port?: unknown };
      const isNode =
        typeof host === "string" &&
        host !== "" &&
        Number.isInteger(port) &&
        Number(port) >= 1 &&
        Number(port) <= 65535;
      if (!isNode)
        problems.push([["nodes", index], "must be { host, port } with a port from 1 to 65535"]);
    });
  }
  if (typeof given.name !== "string" || !/^[A-Za-z0-9._-]{1,64}$/.test(given.name)) {
    problems.push([
      ["name"],
      "must be the master group name: 1-64 letters, digits, '.', '_' or '-'",
    ]);
  }
  for (const field of ["username", "password"] as const) {
    if (given[field] !== undefined && (typeof given[field] !== "string" || given[field] === "")) {
      problems.push([[field], "must be a non-empty string when given"]);
    }
  }
  if (given.tls !== undefined && typeof given.tls !== "boolean") {
    problems.push([["tls"], "must be true or false"]);
  }
  return problems;
}

/** How an enforcer follows its region's shares of the global limits. */
export interface EnforcerGlobalBudgetOptions {
  /**
   * How often the shares are read and the demand written: one pipeline to the region's Redis.
   * A decrease is in force here at most this long plus two reads' round trips after it is
   * written; the reconciler waits `GLOBAL_BUDGET_APPLY_MS` (300 by default) for that.
   * @default 100
   */
  readonly pollIntervalMs?: number;
  /**
   * The share used before one is read and after a lease ends (the reconciler writes its own floor
   * with each share, which then applies): `GLOBAL_BUDGET_FLOOR_SHARE`.
   * @default 0.02
   */
  readonly floorShare?: number;
}

/** Why `url` cannot name a Redis, or null when it can. */
function redisUrlProblem(url: unknown): string | null {
  if (typeof url !== "string") return `must be a redis:// or rediss:// URL, got ${typeof url}`;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return `must be a redis:// or rediss:// URL such as redis://127.0.0.1:6379, got ${JSON.stringify(url)}`;
  }
  if (parsed.protocol !== "redis:" && parsed.protocol !== "rediss:") {
    return `must be a redis:// or rediss:// URL such as redis://127.0.0.1:6379, got ${JSON.stringify(redactedRedisUrl(url))}`;
  }
  if (parsed.hostname === "") return `names no host: ${JSON.stringify(redactedRedisUrl(url))}`;
  return null;
}

/** `url` for a log line: its password, if any, replaced. */
export function redactedRedisUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password !== "") parsed.password = "***";
    return parsed.toString();
  } catch {
    return "(not a URL)";
  }
}
