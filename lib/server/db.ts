/**
 * The one place that creates the Prisma client. Prisma 7 talks to Postgres through the `pg` driver
 * adapter, so no query-engine binary is needed anywhere.
 */
import { PrismaPg } from "@prisma/adapter-pg";
import { PrismaClient } from "@/lib/generated/prisma/client";
import { loadEnv } from "@/lib/server/env";

export interface CreatePrismaOptions {
  /** @default DATABASE_URL */
  databaseUrl?: string;
  /** Connections in the pool. @default DATABASE_POOL_SIZE (10) */
  poolSize?: number;
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
  return new PrismaClient({ adapter });
}

// Next.js dev mode reloads modules; keep one client per process across reloads.
const globalForPrisma = globalThis as typeof globalThis & { limitplanePrisma?: PrismaClient };

/** The process-wide client, created on first use. */
export function getPrisma(): PrismaClient {
  globalForPrisma.limitplanePrisma ??= createPrisma();
  return globalForPrisma.limitplanePrisma;
}
