/**
 * Health of the control plane's dependencies, for the status page and `GET /api/health`.
 * Every check is bounded in time and returns data, never throws: a status page that errors when
 * Redis is down is no status page.
 */
import "server-only";
import { readdir } from "node:fs/promises";
import path from "node:path";
import type { RedisClient } from "@limitplane/enforcer/publication";
import { listEnforcers } from "@/lib/control/fleet/list-enforcers";
import { fleetDeps } from "@/lib/server/composition";
import { getPrisma } from "@/lib/server/db";
import { loadEnv } from "@/lib/server/env";
import { createRedis } from "@/lib/server/redis";

export interface ServiceCheck {
  ok: boolean;
  /** Round trip of the probe, when it answered. */
  latencyMs: number | null;
  /** Where we looked, without credentials: `127.0.0.1:6379`. */
  target: string;
  /** Server version when reachable. */
  version: string | null;
  /** A short reason when unreachable, e.g. `connection refused`. */
  error: string | null;
}

export interface MigrationStatus {
  name: string;
  appliedAt: string | null;
}

export interface StatusReport {
  checkedAt: string;
  postgres: ServiceCheck;
  redis: ServiceCheck;
  migrations: { applied: MigrationStatus[]; pending: string[] } | null;
  build: { version: string; commit: string; builtAt: string };
  /** The gateways' heartbeats; null when Redis could not be read. */
  gateways: GatewaysStatus | null;
}

export interface GatewaysStatus {
  /** Gateways whose heartbeat has not expired. */
  reporting: number;
  /** The published policy version; null when Redis holds none under this key prefix. */
  publishedVersion: number | null;
  /** The gateways whose heartbeat says they run no policy. */
  withoutPolicy: {
    id: string;
    action: "admit" | "reject";
    decisions: number;
    sinceMs: number | null;
  }[];
  /**
   * The gateways running the last good policy saved on their disk (`policyCache`) because Redis
   * gave them none at start: which version, saved when.
   */
  onCachedPolicy: { id: string; version: number | null; savedAtMs: number | null }[];
}

const CHECK_TIMEOUT_MS = 1_500;

function targetOf(url: string): string {
  const parsed = new URL(url);
  return `${parsed.hostname}:${parsed.port || (parsed.protocol.startsWith("redis") ? "6379" : "5432")}${parsed.pathname}`;
}

/** A reason an operator can act on, without internals. */
export function describeConnectionError(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  const message = error instanceof Error ? error.message : String(error);
  if (code === "ECONNREFUSED" || /ECONNREFUSED/.test(message)) return "connection refused";
  // Prisma's driver adapter says this for a refused or unanswered connection alike.
  if (/Can't reach database server/.test(message)) return "cannot connect";
  if (code === "ENOTFOUND" || /ENOTFOUND/.test(message)) return "host not found";
  if (code === "ETIMEDOUT" || /timed? ?out|timeout/i.test(message)) return "timed out";
  if (code === "3D000" || /does not exist/.test(message)) return "database does not exist";
  if (code === "28P01" || /authentication/i.test(message)) return "authentication failed";
  if (/max retries|Connection is closed|isn't writeable/i.test(message)) {
    return "not connected";
  }
  return "unreachable";
}

function withTimeout<T>(promise: Promise<T>, timeoutMs: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("timed out")), timeoutMs);
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}

export async function checkPostgres(): Promise<ServiceCheck> {
  const target = targetOf(loadEnv().DATABASE_URL);
  const startedAt = performance.now();
  try {
    const rows = await withTimeout(
      getPrisma().$queryRaw<
        { version: string }[]
      >`SELECT current_setting('server_version') AS version`,
      CHECK_TIMEOUT_MS,
    );
    return {
      ok: true,
      latencyMs: performance.now() - startedAt,
      target,
      version: rows[0]?.version ?? null,
      error: null,
    };
  } catch (error: unknown) {
    return {
      ok: false,
      latencyMs: null,
      target,
      version: null,
      error: describeConnectionError(error),
    };
  }
}

interface StatusRedis {
  client: RedisClient;
  /** The last connection error, so a check can say why Redis is down instead of waiting. */
  lastError: unknown;
}

const globalForStatus = globalThis as typeof globalThis & { limitplaneStatusRedis?: StatusRedis };

function statusRedis(): StatusRedis {
  if (!globalForStatus.limitplaneStatusRedis) {
    const client = createRedis("control", {
      commandTimeoutMs: CHECK_TIMEOUT_MS,
      connectionName: "limitplane-status",
    });
    const holder: StatusRedis = { client, lastError: null };
    client.on("error", (error: unknown) => {
      holder.lastError = error;
    });
    client.on("ready", () => {
      holder.lastError = null;
    });
    globalForStatus.limitplaneStatusRedis = holder;
  }
  return globalForStatus.limitplaneStatusRedis;
}

/** Resolves when the client is ready; rejects with the connection error, or after `timeoutMs`. */
function whenReady(redis: StatusRedis, timeoutMs: number): Promise<void> {
  if (redis.client.status === "ready") return Promise.resolve();
  if (redis.lastError !== null) return Promise.reject(redis.lastError);
  return withTimeout(
    new Promise<void>((resolve, reject) => {
      redis.client.once("ready", () => resolve());
      redis.client.once("error", (error: unknown) => reject(error));
    }),
    timeoutMs,
  );
}

export async function checkRedis(): Promise<ServiceCheck> {
  const target = targetOf(loadEnv().REDIS_URL);
  try {
    const redis = statusRedis();
    await whenReady(redis, CHECK_TIMEOUT_MS);
    const startedAt = performance.now();
    await withTimeout(redis.client.ping(), CHECK_TIMEOUT_MS);
    const latencyMs = performance.now() - startedAt;
    const info = await withTimeout(redis.client.info("server"), CHECK_TIMEOUT_MS);
    const version = /redis_version:([^\r\n]+)/.exec(info)?.[1] ?? null;
    return { ok: true, latencyMs, target, version, error: null };
  } catch (error: unknown) {
    return {
      ok: false,
      latencyMs: null,
      target,
      version: null,
      error: describeConnectionError(error),
    };
  }
}

async function migrationsOnDisk(): Promise<string[] | null> {
  try {
    const entries = await readdir(path.join(process.cwd(), "prisma/migrations"), {
      withFileTypes: true,
    });
    return entries
      .filter((entry) => entry.isDirectory() && /^\d{14}_/.test(entry.name))
      .map((entry) => entry.name)
      .sort();
  } catch {
    return null;
  }
}

export async function checkMigrations(): Promise<StatusReport["migrations"]> {
  try {
    const rows = await withTimeout(
      getPrisma().$queryRaw<{ migration_name: string; finished_at: Date | null }[]>`
        SELECT migration_name, finished_at FROM _prisma_migrations
        WHERE rolled_back_at IS NULL ORDER BY started_at`,
      CHECK_TIMEOUT_MS,
    );
    const applied = rows.map((row) => ({
      name: row.migration_name,
      appliedAt: row.finished_at?.toISOString() ?? null,
    }));
    const appliedNames = new Set(applied.filter((m) => m.appliedAt).map((m) => m.name));
    const onDisk = (await migrationsOnDisk()) ?? [];
    return { applied, pending: onDisk.filter((name) => !appliedNames.has(name)) };
  } catch {
    return null;
  }
}

export function buildInfo(): StatusReport["build"] {
  return {
    version: process.env.LIMITPLANE_VERSION ?? "dev",
    commit: process.env.LIMITPLANE_COMMIT ?? "unknown",
    builtAt: process.env.LIMITPLANE_BUILT_AT ?? "unknown",
  };
}

/** What the gateways' heartbeats say, bounded in time like the other checks; null on failure. */
export async function checkGateways(): Promise<GatewaysStatus | null> {
  try {
    return gatewaysStatusOf(await withTimeout(listEnforcers(fleetDeps()), CHECK_TIMEOUT_MS));
  } catch {
    return null;
  }
}

/** The fleet as /status sums it up: who reports, who runs no policy, who runs a cached one. */
export function gatewaysStatusOf(fleet: Awaited<ReturnType<typeof listEnforcers>>): GatewaysStatus {
  return {
    reporting: fleet.enforcers.length,
    publishedVersion: fleet.published?.version ?? null,
    withoutPolicy: fleet.enforcers.flatMap((enforcer) =>
      enforcer.noPolicy === null ? [] : [{ id: enforcer.id, ...enforcer.noPolicy }],
    ),
    onCachedPolicy: fleet.enforcers.flatMap((enforcer) =>
      enforcer.cachedPolicy === null
        ? []
        : [{ id: enforcer.id, version: enforcer.version, ...enforcer.cachedPolicy }],
    ),
  };
}

export async function statusReport(): Promise<StatusReport> {
  const [postgres, redis, migrations, gateways] = await Promise.all([
    checkPostgres(),
    checkRedis(),
    checkMigrations(),
    checkGateways(),
  ]);
  return {
    checkedAt: new Date().toISOString(),
    postgres,
    redis,
    migrations,
    build: buildInfo(),
    gateways,
  };
}
