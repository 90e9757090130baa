/**
 * What route files import: `routeHandlers` (every method of the route: the endpoints', and a JSON
 * 405 for the rest), with the API's authenticator (sessions and API tokens,
 * lib/control/auth/authenticate.ts) passed in from the composition root.
 */
import { apiAuthenticator } from "@/lib/server/composition";
import {
  type AnyEndpoint,
  createRouteHandlers,
  methodAnswers,
  type RouteHandlers,
  routeNotFound,
} from "./endpoint";

/**
 * `export const { GET, HEAD, OPTIONS, POST, PUT, PATCH, DELETE } = routeHandlers(listTiers,
 * createTier)`.
 */
export function routeHandlers(...endpoints: readonly AnyEndpoint[]): RouteHandlers {
  return createRouteHandlers(apiAuthenticator, endpoints);
}

export { methodAnswers, routeNotFound };
