/**
 * An embedded Postgres for machines without one: PGlite (Postgres compiled to WebAssembly) served
 * over the wire protocol by its socket server, with its data in a folder so it survives restarts.
 *
 * PGlite is a single session. The socket server is configured for ONE connection at a time, so
 * every process that uses it must use a pool of one, and only one such process may run at a time:
 * `up` runs the migration and the seed one after the other, then the console with the worker's
 * jobs in the same process (LIMITPLANE_WORKER=in-process).
 */
import { mkdirSync } from "node:fs";
import { PGlite } from "@electric-sql/pglite";
import { pg_trgm } from "@electric-sql/pglite/contrib/pg_trgm";
import { PGLiteSocketServer } from "@electric-sql/pglite-socket";

export interface EmbeddedPostgres {
  /** A postgresql:// URL for the one connection it serves. */
  readonly url: string;
  /** Resolves once no client is connected, so the next process can connect. */
  whenIdle(timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
}

export async function startEmbeddedPostgres(options: {
  dataDir: string;
  port: number;
}): Promise<EmbeddedPostgres> {
  mkdirSync(options.dataDir, { recursive: true });
  // pg_trgm backs the customer search indexes created by the migrations.
  const db = await PGlite.create({ dataDir: options.dataDir, extensions: { pg_trgm } });
  const server = new PGLiteSocketServer({
    db,
    host: "127.0.0.1",
    port: options.port,
    maxConnections: 1,
  });
  await server.start();
  return {
    url: `postgresql://postgres@127.0.0.1:${options.port}/postgres`,
    async whenIdle(timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs;
      // A client that just disconnected is released a moment later; a new one must wait for it.
      while (server.getStats().activeConnections > 0) {
        if (Date.now() > deadline)
          throw new Error("the embedded Postgres still has a client connected");
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
    },
    async stop() {
      await server.stop();
      await db.close();
    },
  };
}
