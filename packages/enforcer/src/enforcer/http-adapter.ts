/**
 * What the HTTP adapters (`fetch-middleware.ts`, `node-middleware.ts`) share: who the caller is,
 * where it connects from, and the options both take.
 *
 * Client address and proxies: by default the address is the TCP peer (Node) or unknown (Fetch,
 * which has no socket: pass `clientAddress`). `X-Forwarded-For` is read only when `trustProxy` is
 * set, because any client can send that header: trusting it without a proxy in front lets a caller
 * pick a fresh address per request and walk around every per-address limit (sign-in included).
 * With `trustProxy: n` the address is the n-th entry from the right, the one the outermost of your
 * n proxies appended; the entries to its left came from the client and are never used.
 */
import type { EnforcerRequest } from "./decision-engine";

/** Who the caller is, when the gateway knows (after authentication). */
export interface Identity {
  readonly customerId?: string | null;
  readonly tier?: string | null;
}

/** Options both adapters take; `R` is the framework's request type. */
export interface HttpAdapterOptions<R> {
  /**
   * The authenticated customer and tier, from your authentication (an API key lookup, a session).
   * Null or absent fields mean anonymous: the request is keyed by client address with the
   * policy's loose anonymous limits. Should not throw for a bad credential: answer null and let
   * your authentication reject the request.
   * @default () => null (everyone anonymous)
   */
  readonly identify?: (request: R) => Identity | null | Promise<Identity | null>;
  /**
   * How many proxies in front of this server append to `X-Forwarded-For`. See the module comment
   * for the spoofing risk. `true` is 1.
   * @default false (the header is ignored)
   */
  readonly trustProxy?: boolean | number;
  /**
   * The client address, when you know it better (a platform header you trust). Overrides
   * `trustProxy` and the socket. Return null for unknown.
   * @default the socket's peer (Node); X-Forwarded-For with trustProxy, else unknown (Fetch)
   */
  readonly clientAddress?: (request: R) => string | null | undefined;
  /**
   * Units of cost for this request, overriding its endpoint class's; undefined keeps the class's.
   * @default () => undefined
   */
  readonly cost?: (request: R) => number | undefined;
  /**
   * The endpoint class, when the route knows it; undefined lets the policy match method and path.
   * @default () => undefined
   */
  readonly endpointClass?: (request: R) => string | undefined;
}

/** How many trusted proxy hops `trustProxy` means. */
export function trustedHops(trustProxy: boolean | number | undefined): number {
  if (trustProxy === true) return 1;
  if (trustProxy === false || trustProxy === undefined) return 0;
  if (!(Number.isInteger(trustProxy) && trustProxy >= 0 && trustProxy <= 32)) {
    throw new RangeError(`trustProxy must be a boolean or a whole number 0-32, got ${trustProxy}`);
  }
  return trustProxy;
}

/** The enforcer request for what an adapter learned. */
export function enforcerRequestOf(parts: {
  readonly identity: Identity | null;
  readonly method: string;
  readonly path: string;
  readonly clientAddress: string | null;
  readonly cost: number | undefined;
  readonly endpointClass: string | undefined;
}): EnforcerRequest {
  // Built without spreads (this runs per request); absent options stay absent.
  const request: {
    customerId: string | null;
    tier: string | null;
    method: string;
    path: string;
    clientAddress: string | null;
    cost?: number;
    endpointClass?: string;
  } = {
    customerId: parts.identity?.customerId ?? null,
    tier: parts.identity?.tier ?? null,
    method: parts.method,
    path: parts.path,
    clientAddress: parts.clientAddress,
  };
  if (parts.cost !== undefined) request.cost = parts.cost;
  if (parts.endpointClass !== undefined) request.endpointClass = parts.endpointClass;
  return request;
}
