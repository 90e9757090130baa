/**
 * A Fastify API behind the enforcer. Fastify answers through its own reply, so the limiter is an
 * `onRequest` hook calling `enforcer.check` and applying the result's HTTP parts: the headers on
 * every response, and on a rejection its status and problem body. The hook sits in a plugin, so
 * it limits the API's routes and not the health check.
 */
import type { Enforcer, EnforcerRequest } from "@limitplane/enforcer";
import Fastify, { type FastifyInstance, type FastifyRequest } from "fastify";

export interface AppOptions {
  readonly enforcer: Enforcer;
  /** API key to customer; a request without a known key is anonymous (limited by address). */
  readonly apiKeys: ReadonlyMap<string, string>;
  /**
   * Whether a proxy of yours in front of this server sets X-Forwarded-For (Fastify's
   * `trustProxy`: `request.ip` then reads it). Never true without one: any client can write it.
   * @default false
   */
  readonly trustProxy?: boolean;
}

export function buildApp({ enforcer, apiKeys, trustProxy = false }: AppOptions): FastifyInstance {
  const app = Fastify({ trustProxy });

  app.get("/healthz", async (_request, reply) => {
    const status = enforcer.status();
    return reply.code(status.isReady ? 200 : 503).send({ ready: status.isReady });
  });

  app.register(async (api) => {
    api.addHook("onRequest", async (request, reply) => {
      const { http } = await enforcer.check(limiterRequestOf(request, apiKeys));
      reply.headers(http.headers);
      if (http.status !== null) return reply.code(http.status).send(http.bodyText);
    });
    api.get("/v1/things", async () => ({ things: [] }));
    api.post("/v1/sign-in", async () => ({ signedIn: false }));
  });
  return app;
}

/** What the enforcer needs to know about a request; `request.ip` honours `trustProxy`. */
function limiterRequestOf(
  request: FastifyRequest,
  apiKeys: ReadonlyMap<string, string>,
): EnforcerRequest {
  const key = request.headers["x-api-key"];
  const customerId = typeof key === "string" ? (apiKeys.get(key) ?? null) : null;
  return {
    customerId,
    tier: customerId === null ? null : "standard",
    method: request.method,
    path: request.url,
    clientAddress: request.ip,
  };
}
