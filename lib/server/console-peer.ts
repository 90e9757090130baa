/**
 * What only the console's own server (`npm start`, scripts/console.ts) knows of a request: the
 * TCP peer's address and whether the connection is TLS. Next.js gives route handlers no socket,
 * so the server writes both into the request header `x-limitplane-peer`, replacing any copy the
 * client sent. The header starts with a random key made when that server starts, so under any
 * other server (`next dev`, a bare `next start`) a client cannot forge it: it is ignored there.
 */
import "server-only";
import { randomBytes, timingSafeEqual } from "node:crypto";
import type { IncomingMessage } from "node:http";

export const PEER_HEADER = "x-limitplane-peer";
/** Where the key lives: the process's environment, which Next.js's server code shares. */
const PEER_KEY_VARIABLE = "LIMITPLANE_PEER_KEY";

export interface ConnectionPeer {
  /** The socket's remote address, as Node reports it (`::ffff:127.0.0.1` for IPv4 on a dual stack). */
  readonly address: string;
  readonly isTls: boolean;
}

/** Made once by the console's server, before Next.js loads; writes the header on each request. */
export function createPeerStamp(): (request: IncomingMessage) => void {
  const key = randomBytes(16).toString("hex");
  process.env[PEER_KEY_VARIABLE] = key;
  return (request) => {
    const socket = request.socket as IncomingMessage["socket"] & { encrypted?: boolean };
    const scheme = socket.encrypted === true ? "https" : "http";
    request.headers[PEER_HEADER] = `${key} ${scheme} ${socket.remoteAddress ?? "unknown"}`;
  };
}

/** The peer the console's server stamped, or null when the request did not come through it. */
export function connectionPeerOf(headers: Pick<Headers, "get">): ConnectionPeer | null {
  const key = process.env[PEER_KEY_VARIABLE];
  const value = headers.get(PEER_HEADER);
  if (key === undefined || key === "" || value === null) return null;
  const [given = "", scheme, address] = value.split(" ");
  const expected = Buffer.from(key);
  const actual = Buffer.from(given);
  if (actual.length !== expected.length || !timingSafeEqual(actual, expected)) return null;
  if (address === undefined || address === "unknown") return null;
  return { address, isTls: scheme === "https" };
}
