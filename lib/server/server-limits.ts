/**
 * The limits every HTTP server we ship sets on its clients (the console's, scripts/console.ts,
 * and the demo gateway's, scripts/gateway.ts), so slow or greedy clients are shed instead of held:
 *
 * | Limit | Value | Why |
 * | --- | --- | --- |
 * | `headersTimeout` | 10 s | A request's headers must arrive within it, else 408 and the socket closes: a slowloris client trickling headers is shed |
 * | `requestTimeout` | 60 s | The whole request, body included (a policy import over a slow link) |
 * | `keepAliveTimeout` | given by the caller | An idle keep-alive socket closes after it; idle sockets are not held to `headersTimeout` |
 * | `maxHeadersCount` | 100 | Headers past it are dropped |
 * | `maxConnections` | 1 000 | Sockets past it are closed on accept |
 * | `connectionsCheckingInterval` | 1 s | How often the timeouts are checked (Node's default is 30 s, which would let a slow client stay 40 s) |
 *
 * Node limits the headers' total size to 16 KiB (431 past it); request bodies are capped by each
 * API endpoint (lib/api/read-json.ts).
 */
import type { Server, ServerOptions } from "node:http";

export const SERVER_LIMITS = {
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 60_000,
  maxHeadersCount: 100,
  maxConnections: 1_000,
  checkIntervalMs: 1_000,
} as const;

/** The options to create the server with (`connectionsCheckingInterval` can be set only there). */
export function serverLimitOptions(keepAliveMs: number): ServerOptions {
  return {
    headersTimeout: SERVER_LIMITS.headersTimeoutMs,
    requestTimeout: SERVER_LIMITS.requestTimeoutMs,
    keepAliveTimeout: keepAliveMs,
    connectionsCheckingInterval: SERVER_LIMITS.checkIntervalMs,
  };
}

/** The limits set on a created server. */
export function applyServerLimits(server: Server): void {
  server.maxHeadersCount = SERVER_LIMITS.maxHeadersCount;
  server.maxConnections = SERVER_LIMITS.maxConnections;
}
