/**
 * What route files import: `routeHandlers` (every method of the route: the endpoints', and a JSON
 * 405 for the rest), with the API's authenticator installed (sessions and API tokens,
 * lib/control/auth/authenticate.ts). Importing it from here, never from endpoint.ts, is what
 * guarantees no route runs without one.
 */
import { authenticateRequest } from "@/lib/control/auth/authenticate";
import { methodAnswers, routeHandlers, routeNotFound, setAuthenticator } from "./endpoint";

setAuthenticator({ authenticate: (request) => authenticateRequest(request) });

export { methodAnswers, routeHandlers, routeNotFound };
