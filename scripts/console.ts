/**
 * `npm start`: the console's HTTP server, serving the production build (`npm run build`) through
 * Next.js. What it adds to `next start`:
 *
 * - it listens on CONSOLE_HOST, 127.0.0.1 unless told otherwise, and PORT, and prints the one
 *   address it serves; over https when CONSOLE_TLS_CERT_FILE and CONSOLE_TLS_KEY_FILE are set;
 * - it tells the app each request's connection (peer address, TLS) in a header only it can write
 *   (lib/server/console-peer.ts), which the sign-in limit and HSTS rely on, and hands the import
 *   routes their body as Node's stream, not copied piece by piece into a web stream;
 * - it keeps idle connections open for 65 s, longer than clients keep theirs (Node's agent: 5 s),
 *   so a client never sends on a socket the server is closing, and sheds slow or greedy clients
 *   (lib/server/server-limits.ts: headers within 10 s, 1 000 connections at most);
 * - SIGTERM or SIGINT stops it: no new connections, requests in flight finish (10 s at most),
 *   exit 0;
 * - it runs as production unless NODE_ENV says otherwise, so production's refusals (a
 *   development secret, lib/server/env.ts) apply to `npm start` without anyone remembering to set
 *   NODE_ENV; `NODE_ENV=development npm start` is the explicit way out.
 */
import { readFileSync } from "node:fs";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { createServer as createTlsServer } from "node:https";
import path from "node:path";
import { createPeerStamp } from "../lib/server/console-peer";
import { EnvError, loadEnv } from "../lib/server/env";
import { applyServerLimits, serverLimitOptions } from "../lib/server/server-limits";

const ROOT = path.resolve(import.meta.dirname, "..");
const KEEP_ALIVE_MS = 65_000;
const DRAIN_MS = 10_000;

async function main(): Promise<void> {
  // Before Next.js loads (it reads NODE_ENV when imported) and before the configuration is read.
  Object.assign(process.env, { NODE_ENV: process.env.NODE_ENV ?? "production" });
  const env = loadEnv();
  const { default: next } = await import("next");
  const stamp = createPeerStamp();
  const app = next({ dev: false, dir: ROOT, hostname: env.CONSOLE_HOST, port: env.PORT });
  const handle = app.getRequestHandler();
  await app.prepare();
  const listener = (request: IncomingMessage, response: ServerResponse) => {
    stamp(request, response);
    void handle(request, response);
  };
  const tls =
    env.CONSOLE_TLS_CERT_FILE !== undefined && env.CONSOLE_TLS_KEY_FILE !== undefined
      ? {
          cert: readTlsFile("CONSOLE_TLS_CERT_FILE", env.CONSOLE_TLS_CERT_FILE),
          key: readTlsFile("CONSOLE_TLS_KEY_FILE", env.CONSOLE_TLS_KEY_FILE),
        }
      : null;
  const limits = serverLimitOptions(KEEP_ALIVE_MS);
  const server =
    tls === null
      ? createServer(limits, listener)
      : createTlsServer({ ...limits, ...tls }, listener);
  applyServerLimits(server);
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(env.PORT, env.CONSOLE_HOST, () => resolve());
  });
  const shown = env.CONSOLE_HOST.includes(":") ? `[${env.CONSOLE_HOST}]` : env.CONSOLE_HOST;
  console.log(`console: listening on ${tls === null ? "http" : "https"}://${shown}:${env.PORT}`);

  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    console.log(`console: ${signal}, stopping`);
    const force = setTimeout(() => server.closeAllConnections(), DRAIN_MS);
    force.unref();
    server.close(() => process.exit(0));
    server.closeIdleConnections();
  };
  process.on("SIGTERM", () => stop("SIGTERM"));
  process.on("SIGINT", () => stop("SIGINT"));
}

function readTlsFile(variable: string, file: string): Buffer {
  try {
    return readFileSync(file);
  } catch (error: unknown) {
    throw new EnvError(`Invalid configuration: ${variable} cannot be read (${String(error)})`);
  }
}

main().catch((error: unknown) => {
  const code = (error as { code?: unknown } | null)?.code;
  console.error(
    error instanceof EnvError
      ? error.message
      : code === "EADDRINUSE"
        ? `console: port ${loadEnv().PORT} on ${loadEnv().CONSOLE_HOST} is in use; stop what holds it (\`ss -ltnp 'sport = :${loadEnv().PORT}'\` shows it) or set PORT`
        : `console: ${error instanceof Error ? error.message : String(error)}`,
  );
  process.exit(1);
});
