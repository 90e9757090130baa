/**
 * An Express API behind the enforcer: every route after the health checks is limited. The
 * enforcer's Node middleware has Express's `(req, res, next)` shape, so it is one `app.use`.
 */
import { createNodeMiddleware, type Enforcer } from "@limitplane/enforcer";
import express, { type Express } from "express";
import type { ApiKeys } from "./api-keys.js";

export interface AppOptions {
  readonly enforcer: Enforcer;
  readonly apiKeys: ApiKeys;
  /** Proxies in front of this server that append to X-Forwarded-For. @default 0 */
  readonly trustProxy?: number;
}

export function createApp({ enforcer, apiKeys, trustProxy = 0 }: AppOptions): Express {
  const app = express();
  app.disable("x-powered-by");

  // Not limited: health checks and the metrics scrape.
  app.get("/healthz", (_req, res) => {
    const status = enforcer.status();
    res.status(status.isReady ? 200 : 503).json({ ready: status.isReady, policy: status.policy });
  });
  app.get("/metrics", (_req, res) => {
    res.type("text/plain; version=0.0.4").send(enforcer.prometheus());
  });

  app.use(
    createNodeMiddleware(enforcer, {
      identify: (req) => apiKeys.lookUp(req.headers.authorization),
      trustProxy,
    }),
  );

  app.get("/v1/things", (_req, res) => {
    res.json({ things: [] });
  });
  app.get("/v1/search", (req, res) => {
    res.json({ query: req.query.q ?? null, results: [] });
  });
  app.get("/v1/reports/:id", (req, res) => {
    res.json({ report: req.params.id });
  });
  return app;
}
