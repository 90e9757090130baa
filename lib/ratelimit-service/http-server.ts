/**
 * The HTTP side: the forward-auth `/check` endpoint, Prometheus `/metrics`, liveness `/healthz`
 * and readiness `/readyz` (503 until a policy is in force).
 *
 * `/check` spends customers' budgets, so it answers only a caller that proves it is the gateway:
 * the shared secret in `X-Limitplane-Secret`, or, with a client CA configured, a client
 * certificate that CA signed. The service refuses to start with neither. The other paths show
 * nothing secret and answer anyone who reaches the port, so a load balancer and Prometheus need
 * no credential.
 *
 * The server sets the limits every HTTP server we ship sets (lib/server/server-limits.ts:
 * headers within 10 s, the whole request within 60 s, 100 headers, 1 000 connections) and, as
 * forward-auth requests carry no body, refuses one over `MAX_CHECK_BODY_BYTES` with 413.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import { once } from "node:events";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import type { TLSSocket } from "node:tls";
import { applyServerLimits, serverLimitOptions } from "@/lib/server/server-limits";
import type { CheckRequest } from "./decide-descriptors";
import { type ForwardAuthOptions, forwardAuthAnswerOf, forwardAuthRequestOf } from "./forward-auth";
import type { GrpcTls } from "./grpc-server";
import type { ServiceMetrics } from "./service-metrics";

/** Forward-auth requests have no body; a larger one is refused with 413. */
export const MAX_CHECK_BODY_BYTES = 64 * 1024;

/** Keep-alive sockets from the proxy stay open this long between requests. */
const KEEP_ALIVE_MS = 30_000;

/**
 * Discards the body, or answers 413 and closes the connection once it passes the cap (declared
 * or streamed). Returns false when the request was refused.
 */
function discardBody(req: IncomingMessage, res: ServerResponse): boolean {
  const tooLarge = () => {
    res.setHeader("Connection", "close");
    sendProblem(
      res,
      413,
      "Payload too large",
      `a request body is at most ${MAX_CHECK_BODY_BYTES} bytes; /check needs none`,
    );
    req.destroy();
  };
  if (Number(req.headers["content-length"] ?? 0) > MAX_CHECK_BODY_BYTES) {
    tooLarge();
    return false;
  }
  let received = 0;
  req.on("data", (chunk: Buffer) => {
    received += chunk.length;
    if (received > MAX_CHECK_BODY_BYTES && !res.headersSent) tooLarge();
    else if (received > MAX_CHECK_BODY_BYTES) req.destroy();
  });
  return true;
}

/** The header carrying the shared secret. */
export const SECRET_HEADER = "x-limitplane-secret";

export interface HttpServerOptions {
  readonly check: CheckRequest;
  readonly metrics: ServiceMetrics;
  readonly forwardAuth: ForwardAuthOptions;
  /** The shared secret `/check` requires; null when only client certificates are accepted. */
  readonly secret: string | null;
  /** HTTPS with this certificate; with `clientCa`, `/check` accepts its clients' certificates. */
  readonly tls: GrpcTls | null;
  readonly isReady: () => boolean;
  readonly status: () => unknown;
  readonly prometheus: () => string;
  readonly logError: (message: string, error: unknown) => void;
}

export interface RunningHttpServer {
  readonly server: Server;
  readonly port: number;
  readonly url: string;
  stop(): Promise<void>;
}

function digest(text: string): Buffer {
  return createHash("sha256").update(text).digest();
}

function send(
  res: ServerResponse,
  status: number,
  headers: Readonly<Record<string, string>>,
  body: string,
): void {
  res.writeHead(status, { ...headers, "Content-Length": String(Buffer.byteLength(body)) });
  res.end(body);
}

function sendProblem(res: ServerResponse, status: number, title: string, detail: string): void {
  const body = JSON.stringify({ type: "about:blank", title, status, detail });
  send(res, status, { "Content-Type": "application/problem+json" }, body);
}

function handler(options: HttpServerOptions): (req: IncomingMessage, res: ServerResponse) => void {
  const secretDigest = options.secret === null ? null : digest(options.secret);
  const isAuthorized = (req: IncomingMessage): boolean => {
    const socket = req.socket as Partial<TLSSocket>;
    if (options.tls?.clientCa != null && socket.authorized === true) return true;
    const sent = req.headers[SECRET_HEADER];
    if (secretDigest === null || typeof sent !== "string") return false;
    return timingSafeEqual(digest(sent), secretDigest);
  };
  const { metrics } = options;

  return (req, res) => {
    if (!discardBody(req, res)) return;
    const path = (req.url ?? "/").split("?")[0];
    if (req.method === "GET" && path === "/metrics") {
      send(
        res,
        200,
        { "Content-Type": "text/plain; version=0.0.4; charset=utf-8" },
        options.prometheus(),
      );
      return;
    }
    if (req.method === "GET" && (path === "/healthz" || path === "/readyz")) {
      const status = path === "/healthz" || options.isReady() ? 200 : 503;
      send(res, status, { "Content-Type": "application/json" }, JSON.stringify(options.status()));
      return;
    }
    if (path !== "/check") {
      sendProblem(
        res,
        404,
        "Not found",
        "the service answers /check, /metrics, /healthz and /readyz",
      );
      return;
    }
    if (!isAuthorized(req)) {
      metrics.calls.add({ protocol: "forward-auth", domain: "http", answer: "UNAUTHENTICATED" });
      sendProblem(
        res,
        401,
        "Unauthenticated",
        `send the shared secret in ${SECRET_HEADER}, or a client certificate the service trusts`,
      );
      return;
    }
    const parsed = forwardAuthRequestOf(req.headers, req.socket.remoteAddress, options.forwardAuth);
    if (!parsed.ok) {
      metrics.refused.add({ protocol: "forward-auth", field: parsed.field });
      metrics.calls.add({ protocol: "forward-auth", domain: "http", answer: "INVALID_ARGUMENT" });
      sendProblem(res, 400, "Bad request", `${parsed.field}: ${parsed.message}`);
      return;
    }
    Promise.resolve()
      .then(() => options.check(parsed.request))
      .then(
        (result) => {
          const answer = forwardAuthAnswerOf(result, parsed.denyStatus);
          const code = result.decision.allowed
            ? "OK"
            : result.http.status === 503
              ? "UNAVAILABLE"
              : "OVER_LIMIT";
          metrics.calls.add({ protocol: "forward-auth", domain: "http", answer: code });
          send(res, answer.status, answer.headers, answer.body);
        },
        (error: unknown) => {
          options.logError("forward-auth check failed", error);
          sendProblem(res, 500, "Internal error", "the check failed; see the service's log");
        },
      );
  };
}

/** Starts the HTTP (or, with `tls`, HTTPS) server on `host:port` (0: a free port). */
export async function startHttpServer(
  options: HttpServerOptions,
  host: string,
  port: number,
): Promise<RunningHttpServer> {
  if (options.secret === null && options.tls?.clientCa == null) {
    throw new Error("the forward-auth endpoint needs a shared secret or a client CA");
  }
  const listener = handler(options);
  const server: Server =
    options.tls === null
      ? createServer(serverLimitOptions(KEEP_ALIVE_MS), listener)
      : createHttpsServer(
          {
            ...serverLimitOptions(KEEP_ALIVE_MS),
            cert: options.tls.cert,
            key: options.tls.key,
            ...(options.tls.clientCa === null
              ? {}
              : { ca: options.tls.clientCa, requestCert: true, rejectUnauthorized: false }),
          },
          listener,
        );
  applyServerLimits(server);
  server.listen(port, host);
  await once(server, "listening");
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("not listening on TCP");
  const shownHost = address.family === "IPv6" ? `[${address.address}]` : address.address;
  return {
    server,
    port: address.port,
    url: `${options.tls === null ? "http" : "https"}://${shownHost}:${address.port}`,
    async stop() {
      const closed = once(server, "close");
      server.close();
      server.closeAllConnections();
      await closed;
    },
  };
}
