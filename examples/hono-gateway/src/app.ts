/**
 * A Hono API behind the enforcer's Fetch middleware, which takes a `Request` and a handler: the
 * handler runs the rest of Hono's chain, and the middleware adds the rate-limit headers to its
 * response, or answers a rejection itself. A Fetch `Request` carries no peer address, so the
 * node server's (`getConnInfo`) is handed over beside it.
 */
import { getConnInfo } from "@hono/node-server/conninfo";
import { createFetchMiddleware, type Enforcer, type Identity } from "@limitplane/enforcer";
import { Hono } from "hono";

export interface AppOptions {
  readonly enforcer: Enforcer;
  /** Bearer token to account; a request without a known one is anonymous (limited by address). */
  readonly accounts: ReadonlyMap<string, Identity>;
}

export function createApp({ enforcer, accounts }: AppOptions): Hono {
  const app = new Hono();
  app.get("/healthz", (c) => c.json({ ready: enforcer.status().isReady }));

  const peers = new WeakMap<Request, string>();
  const limit = createFetchMiddleware(enforcer, {
    identify: (request) => {
      const token = /^Bearer\s+(\S+)$/i.exec(request.headers.get("authorization") ?? "")?.[1];
      return token === undefined ? null : (accounts.get(token) ?? null);
    },
    clientAddress: (request) => peers.get(request) ?? null,
  });
  app.use("/v1/*", (c, next) => {
    const address = getConnInfo(c).remote.address;
    if (address !== undefined) peers.set(c.req.raw, address);
    return limit(c.req.raw, async () => {
      await next();
      return c.res;
    });
  });

  app.get("/v1/things", (c) => c.json({ things: [] }));
  app.get("/v1/reports/:id", (c) => c.json({ report: c.req.param("id") }));
  return app;
}
