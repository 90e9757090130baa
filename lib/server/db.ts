/**
 * The one place that creates the Prisma client. Prisma 7 talks to Postgres through the `pg` driver
 * adapter, so no query-engine binary is needed anywhere.
 */
import "server-only";
import { PrismaPg } from "@prisma/adapter-pg";
import { PrismaClient } from "@/lib/generated/prisma/client";
import { loadEnv } from "@/lib/server/env";

export interface CreatePrismaOptions {
  /** @default DATABASE_URL */
  databaseUrl?: string;
  /** Connections in the pool. @default DATABASE_POOL_SIZE (10) */
  poolSize?: number;
  /** Told of every SQL statement the client sends (benchmarks read the plan of what it ran). */
  onQuery?: (event: { query: string; params: string; durationMs: number }) => void;
}

/** A new client with its own pool. Most code wants the shared `getPrisma()` instead. */
export function createPrisma(options: CreatePrismaOptions = {}): PrismaClient {
  const env = loadEnv();
  const adapter = new PrismaPg({
    connectionString: options.databaseUrl ?? env.DATABASE_URL,
    max: options.poolSize ?? env.DATABASE_POOL_SIZE,
    // Fail a request quickly when Postgres is unreachable instead of hanging the page.
    connectionTimeoutMillis: 3_000,
    idleTimeoutMillis: 30_000,
  });
  if (options.onQuery === undefined) return new PrismaClient({ adapter });
  const onQuery = options.onQuery;
  const client = new PrismaClient({ adapter, log: [{ emit: "event", level: "query" }] });
  client.$on("query", (event) => {
    onQuery({ query: event.query, params: event.params, durationMs: event.duration });
  });
  return client;
}

// Next.js dev mode reloads modules; keep one client per process across reloads.
const globalForPrisma = globalThis as typeof globalThis & { limitplanePrisma?: PrismaClient };

/** The process-wide client, created on first use. */
export function getPrisma(): PrismaClient {
  globalForPrisma.limitplanePrisma ??= createPrisma();
  return globalForPrisma.limitplanePrisma;
}
