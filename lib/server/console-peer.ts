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
 * other users' requests (bench/results/import.md). On a plain-HTTP connection with a declared
 * length, a route can also take the rest of the body off this process entirely (`detachBody`):
 * the socket is handed to the child process that parses the document, which reads the bytes
 * itself, so the server's event loop and its garbage collector never see them.
 */
import "server-only";
import { randomBytes, timingSafeEqual } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Socket } from "node:net";

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
interface KeptRequest {
  readonly request: IncomingMessage;
  readonly response: ServerResponse;
}
function rawBodies(): Map<string, KeptRequest> {
  const holder = globalThis as { [RAW_BODIES]?: Map<string, KeptRequest> };
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
    rawBodies().set(id, { request, response });
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
  const body = keptRequestOf(headers)?.request;
  if (body === undefined || body.readableDidRead || body.readableEnded || body.destroyed) {
    return null;
  }
  return body;
}

function keptRequestOf(headers: Pick<Headers, "get">): KeptRequest | null {
  const [given = "", id = ""] = (headers.get(RAW_BODY_HEADER) ?? "").split(" ");
  if (!hasKey(given, process.env[PEER_KEY_VARIABLE])) return null;
  return rawBodies().get(id) ?? null;
}

/** The rest of a body, taken off the server's process by `detachBody`. */
export interface DetachedBody {
  /** Bytes the server had received but nobody had read yet: the body's next bytes. */
  readonly received: readonly Buffer[];
  /** The connection, to be handed to another process (`child.send(message, socket, { keepOpen: true })`). */
  readonly socket: Socket;
  /** How many of the body's bytes are still to be read from `socket`, after `received`. */
  readonly remaining: number;
}

/**
 * Stops this process reading the request's body, for a route that has read `bytesRead` of it
 * through `rawBodyOf` and hands the rest to another process with the socket. The response then
 * closes the connection (the server's HTTP parser never saw the body's end, so the connection
 * cannot carry another request). Null, and nothing changed, when the body cannot be handed over:
 * the request did not come through the console's server, its length is not declared (chunked:
 * the bytes on the wire are not the body's), or the connection is TLS (the bytes on the wire are
 * encrypted).
 */
export function detachBody(headers: Pick<Headers, "get">, bytesRead: number): DetachedBody | null {
  const kept = keptRequestOf(headers);
  if (kept === null) return null;
  const { request, response } = kept;
  const declared = Number(request.headers["content-length"]);
  const socket = request.socket as Socket & {
    encrypted?: boolean;
    _handle?: NodeReadHandle;
    _paused?: boolean;
  };
  if (
    request.headers["transfer-encoding"] !== undefined ||
    !Number.isSafeInteger(declared) ||
    socket.encrypted === true ||
    request.readableEnded ||
    request.destroyed ||
    socket.destroyed
  ) {
    return null;
  }
  // Node reads an HTTP server's socket straight into its parser, and starts again whenever the
  // request stream asks for more: that is stopped for good here, then the pieces already parsed
  // are taken from the stream's buffer.
  // `_paused` is the server's own flag for a socket it must not read from: a `resume` still
  // on its way (Node emits it on the next tick) pauses the socket again instead of reading.
  request._read = () => {};
  socket._paused = true;
  socket.pause();
  // Its `reading` flag is not to be trusted: the parser starts reading without setting it.
  const handle = socket._handle;
  if (handle !== undefined) {
    handle.reading = false;
    handle.readStop();
  }
  const received: Buffer[] = [];
  for (let piece = request.read() as Buffer | null; piece !== null; piece = request.read()) {
    received.push(piece);
  }
  const receivedBytes = received.reduce((sum, piece) => sum + piece.byteLength, 0);
  response.shouldKeepAlive = false;
  return {
    received,
    socket,
    remaining: Math.max(0, declared - bytesRead - receivedBytes),
  };
}

/** The part of Node's TCP handle `detachBody` uses (not in Node's types). */
interface NodeReadHandle {
  reading: boolean;
  readStop(): number;
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
