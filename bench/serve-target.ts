/**
 * What the benchmarks' target processes share: how a customer is read from a request, and the
 * node:http server that puts one endpoint behind a middleware, answers a few unlimited routes,
 * prints `listening on <url>` and stops on SIGTERM. Used by `http-target.ts` and
 * `backtest-target.ts`.
 */
import { once } from "node:events";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";

export type Middleware = (req: IncomingMessage, res: ServerResponse, next: () => void) => void;

/** Customers come as `Authorization: Bearer <id>` and `x-tier` (default `wide`). */
export function customerOf(req: IncomingMessage): { customerId: string; tier: string } | null {
  const customerId = req.headers.authorization?.slice("Bearer ".length);
  if (customerId === undefined || customerId === "") return null;
  const tier = req.headers["x-tier"];
  return { customerId, tier: typeof tier === "string" ? tier : "wide" };
}

/** A route answered before the middleware (not limited). */
export interface UnlimitedRoute {
  readonly contentType: string;
  readonly body: () => string;
}

/** Serves `middleware` in front of a `{"ok":true}` endpoint until SIGTERM, then `stop`s. */
export async function serveTarget(options: {
  readonly middleware: Middleware;
  readonly stop: () => Promise<void>;
  readonly routes?: ReadonlyMap<string, UnlimitedRoute>;
}): Promise<void> {
  const { middleware, stop, routes = new Map() } = options;
  const body = JSON.stringify({ ok: true });
  const server = createServer((req, res) => {
    const route = req.url === undefined ? undefined : routes.get(req.url);
    if (route !== undefined) {
      res.writeHead(200, { "Content-Type": route.contentType });
      res.end(route.body());
      return;
    }
    middleware(req, res, () => {
      res.writeHead(200, { "Content-Type": "application/json" });
      res.end(body);
    });
  });
  server.keepAliveTimeout = 60_000;
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("not listening on TCP");
  console.log(`listening on http://127.0.0.1:${address.port}`);

  process.once("SIGTERM", () => {
    server.close();
    server.closeAllConnections();
    void stop().finally(() => process.exit(0));
  });
}
