/**
 * What route files import: `routeHandlers` (every method of the route: the endpoints', and a JSON
 * 405 for the rest), with the API's authenticator (sessions and API tokens,
 * lib/control/auth/authenticate.ts) passed in from the composition root.
 */
import { requestOriginOf } from "@/lib/server/client-address";
import { apiAuthenticator } from "@/lib/server/composition";
import {
  type AnyEndpoint,
  createRouteHandlers,
  methodAnswers,
  type RouteHandler,
  type RouteHandlers,
  routeNotFound,
} from "./endpoint";
import { securityHeaders } from "./security-headers";

/**
 * `export const { GET, HEAD, OPTIONS, POST, PUT, PATCH, DELETE } = routeHandlers(listTiers,
 * createTier)`.
 */
export function routeHandlers(...endpoints: readonly AnyEndpoint[]): RouteHandlers {
  return createRouteHandlers(apiAuthenticator, endpoints);
}

/**
 * The same, for the routes proxy.ts's matcher leaves out: those whose bodies may be larger than
 * the copy of the body Next.js makes for the proxy (10 MB, `proxyClientMaxBodySize`; beyond it
 * the route would read a truncated body, and below it the whole body would sit in memory twice).
 * Their responses get the proxy's security headers here instead.
 */
export function routeHandlersOutsideProxy(...endpoints: readonly AnyEndpoint[]): RouteHandlers {
  const handlers = createRouteHandlers(apiAuthenticator, endpoints);
  return {
    GET: withSecurityHeaders(handlers.GET),
    HEAD: handlers.HEAD === undefined ? undefined : withSecurityHeaders(handlers.HEAD),
    OPTIONS: withSecurityHeaders(handlers.OPTIONS),
    POST: withSecurityHeaders(handlers.POST),
    PUT: withSecurityHeaders(handlers.PUT),
    PATCH: withSecurityHeaders(handlers.PATCH),
    DELETE: withSecurityHeaders(handlers.DELETE),
  };
}

function withSecurityHeaders(handler: RouteHandler): RouteHandler {
  const wrapped: RouteHandler = async (request, context) => {
    const response = await handler(request, context);
    for (const [name, value] of Object.entries(securityHeaders(requestOriginOf(request).isHttps))) {
      response.headers.set(name, value);
    }
    return response;
  };
  // Keeps what marks a 405 or OPTIONS answer (endpoint.ts `isMethodAnswer`).
  return Object.assign(wrapped, handler);
}

export { methodAnswers, routeNotFound };
