/**
 * The HTTP side: the forward-auth `/check` endpoint, the outbound budgets' routes
 * (`/v1/outbound/{budget}/acquire`, `/renew`, `/release`: outbound-routes.ts), Prometheus
 * `/metrics`, liveness `/healthz` and readiness `/readyz` (503 until a policy is in force).
 *
 * `/check` and the outbound routes spend budgets, so they answer only a caller that proves it is
 * trusted: the shared secret in `X-Limitplane-Secret`, or, with a client CA configured, a client
 * certificate that CA signed. The service refuses to start with neither. The other paths show
 * nothing secret and answer anyone who reaches the port, so a load balancer and Prometheus need
 * no credential.
 *
 * The server sets the limits every HTTP server we ship sets (lib/server/server-limits.ts:
 * headers within 10 s, the whole request within 60 s, 100 headers, 1 000 connections) and, as
 * forward-auth requests carry no body, refuses one over `MAX_CHECK_BODY_BYTES` with 413; an
 * outbound route's body is read up to `MAX_OUTBOUND_BODY_BYTES`. A long poll's wait is not
 * bounded by the request timeout (it covers receiving the request), but by the wait's own
 * maximum (`RATELIMIT_SERVICE_OUTBOUND_MAX_WAIT_MS`).
 */
import { createHash, timingSafeEqual } from "node:crypto";
import { once } from "node:events";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import type { TLSSocket } from "node:tls";
import type { OutboundLimiter } from "@limitplane/enforcer/callers";
import { applyServerLimits, serverLimitOptions } from "@/lib/server/server-limits";
import type { CheckRequest } from "./decide-descriptors";
import { type ForwardAuthOptions, forwardAuthAnswerOf, forwardAuthRequestOf } from "./forward-auth";
import type { GrpcTls } from "./grpc-server";
import {
  acquireAnswer,
  MAX_OUTBOUND_BODY_BYTES,
  type OutboundAction,
  type OutboundAnswer,
  outboundRouteOf,
  parseOutboundBody,
  problemAnswer,
  releaseAnswer,
  renewAnswer,
  ZAcquireBody,
  ZSlotBody,
} from "./outbound-routes";
import type { ServiceMetrics } from "./service-metrics";

/** Forward-auth requests have no body; a larger one is refused with 413. */
export const MAX_CHECK_BODY_BYTES = 64 * 1024;

/** Keep-alive sockets from the proxy stay open this long between requests. */
const KEEP_ALIVE_MS = 30_000;

/**
 * Takes the body's chunks (`onChunk`), or answers 413 and closes the connection once it passes
 * `maxBytes` (declared or streamed). Returns false when the request was refused.
 */
function capBody(
  req: IncomingMessage,
  res: ServerResponse,
  maxBytes: number,
  detail: string,
  onChunk: (chunk: Buffer) => void,
): boolean {
  const tooLarge = () => {
    res.setHeader("Connection", "close");
    sendProblem(res, 413, "Payload too large", detail);
    req.destroy();
  };
  if (Number(req.headers["content-length"] ?? 0) > maxBytes) {
    tooLarge();
    return false;
  }
  let received = 0;
  req.on("data", (chunk: Buffer) => {
    received += chunk.length;
    if (received > maxBytes && !res.headersSent) tooLarge();
    else if (received > maxBytes) req.destroy();
    else onChunk(chunk);
  });
  return true;
}

/** Discards the body, refusing one over `MAX_CHECK_BODY_BYTES` (false: refused). */
function discardBody(req: IncomingMessage, res: ServerResponse): boolean {
  return capBody(
    req,
    res,
    MAX_CHECK_BODY_BYTES,
    `a request body is at most ${MAX_CHECK_BODY_BYTES} bytes; /check needs none`,
    () => {},
  );
}

/** The body as text, or null when it was refused (413) or the client went away. */
function readBody(req: IncomingMessage, res: ServerResponse): Promise<string | null> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    const isTaken = capBody(
      req,
      res,
      MAX_OUTBOUND_BODY_BYTES,
      `a request body is at most ${MAX_OUTBOUND_BODY_BYTES} bytes`,
      (chunk) => chunks.push(chunk),
    );
    if (!isTaken) {
      resolve(null);
      return;
    }
    req.on("end", () => resolve(res.headersSent ? null : Buffer.concat(chunks).toString("utf8")));
    req.on("close", () => resolve(null));
  });
}

/** The header carrying the shared secret. */
export const SECRET_HEADER = "x-limitplane-secret";

export interface HttpServerOptions {
  readonly check: CheckRequest;
  /** The outbound budgets' waiting API, shared through Redis with every process on it. */
  readonly outbound: OutboundLimiter;
  /** The longest any outbound wait lasts, whatever the budget allows: a long poll must end. */
  readonly outboundMaxWaitMs: number;
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

function sendAnswer(res: ServerResponse, answer: OutboundAnswer): void {
  if (answer.status === 204) {
    res.writeHead(204, answer.headers);
    res.end();
    return;
  }
  send(res, answer.status, answer.headers, answer.body);
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

  /** An outbound route: POST only, authenticated, its body parsed, then the limiter's answer. */
  const outbound = async (
    req: IncomingMessage,
    res: ServerResponse,
    budget: string,
    action: OutboundAction,
  ): Promise<void> => {
    const answer = (outboundAnswer: OutboundAnswer) => {
      metrics.outbound.add({ action, answer: String(outboundAnswer.status) });
      sendAnswer(res, outboundAnswer);
    };
    if (req.method !== "POST") {
      if (!discardBody(req, res)) return;
      answer(
        problemAnswer(
          405,
          "Method not allowed",
          `${req.method ?? "this method"} is not allowed on /v1/outbound/{budget}/${action}; use POST`,
          { headers: { Allow: "POST" } },
        ),
      );
      return;
    }
    if (!isAuthorized(req)) {
      if (!discardBody(req, res)) return;
      metrics.outbound.add({ action, answer: "401" });
      sendProblem(
        res,
        401,
        "Unauthenticated",
        `send the shared secret in ${SECRET_HEADER}, or a client certificate the service trusts`,
      );
      return;
    }
    const text = await readBody(req, res);
    if (text === null) return;
    if (action === "acquire") {
      const parsed = parseOutboundBody(ZAcquireBody, text);
      if (!parsed.ok) return answer(parsed.answer);
      // The client's going away ends the wait; a finished response is not a departure.
      const controller = new AbortController();
      res.once("close", () => {
        if (!res.writableFinished) controller.abort(new Error("the client closed the connection"));
      });
      const result = await acquireAnswer(options.outbound, budget, parsed.body, {
        signal: controller.signal,
        serverMaxWaitMs: options.outboundMaxWaitMs,
      });
      if (result === null) metrics.outbound.add({ action, answer: "aborted" });
      else answer(result);
      return;
    }
    const parsed = parseOutboundBody(ZSlotBody, text);
    if (!parsed.ok) return answer(parsed.answer);
    answer(
      action === "renew"
        ? await renewAnswer(options.outbound, budget, parsed.body)
        : await releaseAnswer(options.outbound, budget, parsed.body),
    );
  };

  return (req, res) => {
    const path = (req.url ?? "/").split("?")[0] ?? "/";
    const route = outboundRouteOf(path);
    if (route !== null) {
      outbound(req, res, route.budget, route.action).catch((error: unknown) => {
        options.logError(`outbound ${route.action} failed`, error);
        if (!res.headersSent) {
          sendProblem(res, 500, "Internal error", "the call failed; see the service's log");
        }
      });
      return;
    }
    if (!discardBody(req, res)) return;
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
        "the service answers /check, /v1/outbound/{budget}/acquire, /renew and /release, /metrics, /healthz and /readyz",
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
