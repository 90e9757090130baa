/**
 * What only the console's own server (`npm start`, scripts/console.ts) knows of a request: the
 * TCP peer's address and whether the connection is TLS. Next.js gives route handlers no socket,
 * so the server writes both into the request header `x-limitplane-peer`, replacing any copy the
 * client sent. The header starts with a random key made when that server starts, so under any
 * other server (`next dev`, a bare `next start`) a client cannot forge it: it is ignored there.
 *
 * The same server also hands the routes that take the largest bodies (`RAW_BODY_PATHS`, the
 * imports) their body as Node's own stream (`rawBodyOf`). Next.js gives a route the body as a
 * web stream over undici's Request, which copies every piece it passes on: for a 100 MiB policy
 * import that doubled what the console allocated, and the garbage collection it caused paused
 * other users' requests (bench/results/import.md).
 */
import "server-only";
import { randomBytes, timingSafeEqual } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";

export const PEER_HEADER = "x-limitplane-peer";
/** `<key> <id>`: the id under which the server keeps the request's body stream. */
export const RAW_BODY_HEADER = "x-limitplane-raw-body";
/** Where the key lives: the process's environment, which Next.js's server code shares. */
const PEER_KEY_VARIABLE = "LIMITPLANE_PEER_KEY";

/**
 * The paths whose bodies the server keeps for `rawBodyOf`: the two import routes, which Next.js's
 * proxy skips (proxy.ts `config.matcher`). A route the proxy runs for must not be here: Next.js
 * reads such a body itself, to copy it for the proxy.
 */
export const RAW_BODY_PATHS: readonly string[] = [
  "/api/v1/policy/import",
  "/api/v1/descriptor-rules/import-envoy",
];

/**
 * The kept requests, by id, until their response closes. On `globalThis`: the server's module
 * and the copy Next.js bundles into the routes are two instances of this file, sharing one
 * process.
 */
const RAW_BODIES = Symbol.for("limitplane.console-raw-bodies");
function rawBodies(): Map<string, IncomingMessage> {
  const holder = globalThis as { [RAW_BODIES]?: Map<string, IncomingMessage> };
  holder[RAW_BODIES] ??= new Map();
  return holder[RAW_BODIES];
}

function hasKey(given: string, key: string | undefined): key is string {
  if (key === undefined || key === "") return false;
  const expected = Buffer.from(key);
  const actual = Buffer.from(given);
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}

export interface ConnectionPeer {
  /** The socket's remote address, as Node reports it (`::ffff:127.0.0.1` for IPv4 on a dual stack). */
  readonly address: string;
  readonly isTls: boolean;
}

/**
 * Made once by the console's server, before Next.js loads; writes the headers on each request,
 * and keeps the body stream of a request to one of `RAW_BODY_PATHS` until `response` closes.
 */
export function createPeerStamp(): (request: IncomingMessage, response?: ServerResponse) => void {
  const key = randomBytes(16).toString("hex");
  process.env[PEER_KEY_VARIABLE] = key;
  let lastId = 0;
  return (request, response) => {
    const socket = request.socket as IncomingMessage["socket"] & { encrypted?: boolean };
    const scheme = socket.encrypted === true ? "https" : "http";
    request.headers[PEER_HEADER] = `${key} ${scheme} ${socket.remoteAddress ?? "unknown"}`;
    delete request.headers[RAW_BODY_HEADER];
    const pathname = (request.url ?? "").split("?", 1)[0] ?? "";
    if (response === undefined || !RAW_BODY_PATHS.includes(pathname)) return;
    lastId += 1;
    const id = String(lastId);
    rawBodies().set(id, request);
    response.once("close", () => rawBodies().delete(id));
    request.headers[RAW_BODY_HEADER] = `${key} ${id}`;
  };
}

/**
 * The request's body as the console's server received it, a Node stream of Buffers nobody has
 * read yet; null when the request did not come through that server (the caller reads
 * `request.body`), or when something already began reading it.
 */
export function rawBodyOf(headers: Pick<Headers, "get">): IncomingMessage | null {
  const [given = "", id = ""] = (headers.get(RAW_BODY_HEADER) ?? "").split(" ");
  if (!hasKey(given, process.env[PEER_KEY_VARIABLE])) return null;
  const body = rawBodies().get(id);
  if (body === undefined || body.readableDidRead || body.readableEnded || body.destroyed) {
    return null;
  }
  return body;
}

/** The peer the console's server stamped, or null when the request did not come through it. */
export function connectionPeerOf(headers: Pick<Headers, "get">): ConnectionPeer | null {
  const key = process.env[PEER_KEY_VARIABLE];
  const value = headers.get(PEER_HEADER);
  if (key === undefined || key === "" || value === null) return null;
  const [given = "", scheme, address] = value.split(" ");
  if (!hasKey(given, key)) return null;
  if (address === undefined || address === "unknown") return null;
  return { address, isTls: scheme === "https" };
}
