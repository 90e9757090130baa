/**
 * Where a request came from, as far as the console can know it: the client's address (for the
 * per-address sign-in limit and the session list), whether it arrived over https (for HSTS and
 * the cookie's Secure flag) and the host it was addressed to (for the same-origin check).
 *
 * The console's server (`npm start`) tells the app each connection's own address and whether it
 * is TLS (console-peer.ts). With `CONSOLE_TRUST_PROXY=0`, the default, that is all
 * that is believed: `X-Forwarded-For` and `X-Forwarded-Proto` are the client's to write, so
 * varying them dodges nothing and forging one locks out no one. With `CONSOLE_TRUST_PROXY=n`
 * (n proxies in front, each appending to `X-Forwarded-For`, as nginx's
 * `$proxy_add_x_forwarded_for` and load balancers do), the client is the n-th entry from the right
 * (the gateway's rule, `forwardedClientAddress`), and the scheme and host are the last
 * `X-Forwarded-Proto` and `X-Forwarded-Host` values, the ones the nearest proxy wrote. A request
 * with fewer entries did not come through every proxy and is known by its connection.
 *
 * Everything that depends on these (the session cookie's Secure flag, the same-origin check, the
 * sign-in limit's address, HSTS) reads them here, so one rule holds everywhere.
 *
 * Without the console's server (`next dev`, the integration tests' direct handler calls) there is
 * no connection to read: the last `X-Forwarded-For` entry, which Next.js fills with the peer's
 * address when the client sent none, stands in for it.
 */
import { forwardedClientAddress, normalizeClientAddress } from "@limitplane/enforcer/policy";
import { connectionPeerOf } from "./console-peer";
import { loadEnv } from "./env";

export interface RequestOrigin {
  /** Normalized (an IPv6 address by its /64); null when unknown or unparsable. */
  readonly address: string | null;
  readonly isHttps: boolean;
  /** The host (and port) the client addressed, lower-cased; null when the request named none. */
  readonly host: string | null;
}

function lastEntry(header: string | null): string | null {
  const last = header?.split(",").at(-1)?.trim();
  return last === undefined || last === "" ? null : last;
}

function lowerCased(value: string | null): string | null {
  return value === null ? null : value.toLowerCase();
}

export function requestOriginOf(
  request: Pick<Request, "headers"> & { readonly url?: string },
  trustProxy: number = loadEnv().CONSOLE_TRUST_PROXY,
): RequestOrigin {
  const { headers } = request;
  const forwardedFor = headers.get("x-forwarded-for");
  const forwardedProto = lastEntry(headers.get("x-forwarded-proto"))?.toLowerCase() ?? null;
  const forwardedHost = lowerCased(lastEntry(headers.get("x-forwarded-host")));
  const ownHost = lowerCased(headers.get("host"));
  const peer = connectionPeerOf(headers);
  if (peer === null) {
    const address = forwardedClientAddress(forwardedFor, Math.max(trustProxy, 1));
    const urlProtocol = request.url === undefined ? null : new URL(request.url).protocol;
    return {
      address: address === null ? null : normalizeClientAddress(address),
      isHttps: (forwardedProto ?? urlProtocol?.replace(":", "")) === "https",
      host: forwardedHost ?? ownHost,
    };
  }
  if (trustProxy === 0) {
    return { address: normalizeClientAddress(peer.address), isHttps: peer.isTls, host: ownHost };
  }
  const forwarded = forwardedClientAddress(forwardedFor, trustProxy);
  return {
    address: normalizeClientAddress(forwarded ?? peer.address),
    isHttps: forwardedProto === null ? peer.isTls : forwardedProto === "https",
    host: forwardedHost ?? ownHost,
  };
}

/** The client's address (see `requestOriginOf`), or null. */
export function clientAddressOf(request: Pick<Request, "headers">): string | null {
  return requestOriginOf(request).address;
}
