/**
 * What route files import: `toRouteHandler`, with the API's authenticator installed (sessions
 * and API tokens, lib/control/auth/authenticate.ts). Importing it from here, never from
 * endpoint.ts, is what guarantees no route runs without one.
 */
import { authenticateRequest } from "@/lib/control/auth/authenticate";
import { setAuthenticator, toRouteHandler } from "./endpoint";

setAuthenticator({ authenticate: (request) => authenticateRequest(request) });

export { toRouteHandler };
