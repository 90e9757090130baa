/**
 * The one place that creates the Prisma client. Prisma 7 talks to Postgres through the `pg` driver
 * adapter, so no query-engine binary is needed anywhere.
 */
import "server-only";
import { PrismaPg } from "@prisma/adapter-pg";
import pg from "pg";
import { PrismaClient } from "@/lib/generated/prisma/client";
import { loadEnv } from "@/lib/server/env";

export interface CreatePrismaOptions {
  /** @default DATABASE_URL */
  databaseUrl?: string;
  /** Connections in the pool. @default DATABASE_POOL_SIZE (10) */
  poolSize?: number;
  /**
   * A role every new connection switches to (`SET ROLE`) before its first query.
   * @default DATABASE_ROLE (none)
   */
  role?: string;
  /** Told of every SQL statement the client sends (benchmarks read the plan of what it ran). */
  onQuery?: (event: { query: string; params: string; durationMs: number }) => void;
}

/** A new client with its own pool. Most code wants the shared `getPrisma()` instead. */
export function createPrisma(options: CreatePrismaOptions = {}): PrismaClient {
  const env = loadEnv();
  const config: pg.PoolConfig = {
    connectionString: options.databaseUrl ?? env.DATABASE_URL,
    max: options.poolSize ?? env.DATABASE_POOL_SIZE,
    // Fail a request quickly when Postgres is unreachable instead of hanging the page.
    connectionTimeoutMillis: 3_000,
    idleTimeoutMillis: 30_000,
  };
  const role = options.role ?? env.DATABASE_ROLE;
  const adapter =
    role === undefined
      ? new PrismaPg(config)
      : new PrismaPg(new RoleSwitchingPool(config, role), { disposeExternalPool: true });
  if (options.onQuery === undefined) return new PrismaClient({ adapter });
  const onQuery = options.onQuery;
  const client = new PrismaClient({ adapter, log: [{ emit: "event", level: "query" }] });
  client.$on("query", (event) => {
    onQuery({ query: event.query, params: event.params, durationMs: event.duration });
  });
  return client;
}

type ConnectCallback = (
  error: Error | undefined,
  client: pg.PoolClient | undefined,
  done: (release?: unknown) => void,
) => void;

/**
 * A pool whose every connection has run `SET ROLE role` before anything else uses it (the first
 * checkout of each connection waits for it). If the switch fails, the connection is destroyed and
 * the checkout fails with it, so nothing ever runs as the login role by accident.
 */
class RoleSwitchingPool extends pg.Pool {
  readonly #statement: string;
  readonly #switched = new WeakSet<pg.PoolClient>();

  constructor(config: pg.PoolConfig, role: string) {
    super(config);
    this.#statement = `SET ROLE "${role.replaceAll('"', '""')}"`;
  }

  async #checkout(): Promise<pg.PoolClient> {
    const client = await super.connect();
    if (this.#switched.has(client)) return client;
    try {
      await client.query(this.#statement);
    } catch (error: unknown) {
      client.release(error instanceof Error ? error : new Error(String(error)));
      throw error;
    }
    this.#switched.add(client);
    return client;
  }

  override connect(): Promise<pg.PoolClient>;
  override connect(callback: ConnectCallback): void;
  override connect(callback?: ConnectCallback): Promise<pg.PoolClient> | undefined {
    const ready = this.#checkout();
    if (callback === undefined) return ready;
    ready.then(
      (client) => callback(undefined, client, (release) => client.release(release as Error)),
      (error: unknown) =>
        callback(error instanceof Error ? error : new Error(String(error)), undefined, () => {}),
    );
    return undefined;
  }
}

// Next.js dev mode reloads modules; keep one client per process across reloads.
const globalForPrisma = globalThis as typeof globalThis & { limitplanePrisma?: PrismaClient };

/** The process-wide client, created on first use. */
export function getPrisma(): PrismaClient {
  globalForPrisma.limitplanePrisma ??= createPrisma();
  return globalForPrisma.limitplanePrisma;
}
