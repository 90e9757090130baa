/**
 * The gRPC side: Envoy's `ShouldRateLimit` and the standard health service (`grpc.health.v1`),
 * which reports NOT_SERVING for the whole server and for the RLS service until a policy is in
 * force. Translation only: decoding is grpc-js's, validation `rls-request.ts`'s, the decision
 * `decide-descriptors.ts`'s.
 *
 * Status codes: INVALID_ARGUMENT names the field at fault; UNAVAILABLE is a fail-closed limit that
 * could not be decided (the gateway's failure setting then applies); INTERNAL is an unexpected
 * error, logged once here, with a generic message to the caller.
 */
import { once } from "node:events";
import { createServer as createNetServer, type Server as NetServer, type Socket } from "node:net";
import { createServer as createTlsServer } from "node:tls";
import * as grpc from "@grpc/grpc-js";
import { HealthImplementation } from "grpc-health-check";
import {
  type CheckRequest,
  type DescriptorRules,
  type DescriptorsAnswer,
  decideDescriptors,
} from "./decide-descriptors";
import { encodeRlsResponse } from "./rls-encode";
import { RLS_SERVICE_NAME, rateLimitServiceDefinition } from "./rls-proto";
import { parseRateLimitRequest } from "./rls-request";
import type { ServiceMetrics } from "./service-metrics";

/** The server's certificate and, for mutual TLS, the CA its clients' certificates chain to. */
export interface GrpcTls {
  readonly cert: Buffer;
  readonly key: Buffer;
  /** With a CA, every client must present a certificate it signed (mutual TLS). */
  readonly clientCa: Buffer | null;
}

/**
 * What the gRPC server allows its clients, so slow or greedy ones are shed instead of held
 * (docs/ratelimit-service.md, "Limits"). The service owns its listening socket and TLS (grpc-js
 * is given each accepted connection), which is what makes the first two enforceable:
 *
 * | Limit | Default | Why |
 * | --- | --- | --- |
 * | `maxConnections` | 1 000 | Sockets past it are closed on accept |
 * | `handshakeTimeoutMs` | 10 s | A TLS handshake must finish within it (Node's default is 120 s) |
 * | `idleTimeoutMs` | 60 s | A connection with no call in flight for this long gets GOAWAY and closes: one that never sends a call (a slowloris, or only half the HTTP/2 preface) is shed |
 * | `keepaliveTimeMs` / `keepaliveTimeoutMs` | 30 s / 10 s | The server pings; a peer that does not answer is dropped |
 * | `maxConcurrentStreams` | 1 000 | Calls in flight on one connection |
 * | `maxSessionMemoryMb` | 32 | Buffered headers and frames per connection; past it new calls are refused (grpc-js disables Node's limit by default) |
 *
 * The request size is `maxRequestBytes`; HTTP/2 header lists are capped by Node (64 KiB).
 */
export interface GrpcServerLimits {
  readonly maxConnections: number;
  readonly handshakeTimeoutMs: number;
  readonly idleTimeoutMs: number;
  readonly keepaliveTimeMs: number;
  readonly keepaliveTimeoutMs: number;
  readonly maxConcurrentStreams: number;
  readonly maxSessionMemoryMb: number;
}

export const GRPC_SERVER_LIMITS: GrpcServerLimits = {
  maxConnections: 1_000,
  handshakeTimeoutMs: 10_000,
  idleTimeoutMs: 60_000,
  keepaliveTimeMs: 30_000,
  keepaliveTimeoutMs: 10_000,
  maxConcurrentStreams: 1_000,
  maxSessionMemoryMb: 32,
};

export interface GrpcServerOptions {
  readonly check: CheckRequest;
  /** The policy's descriptor rules and mapping, read on every call (hot reload). */
  readonly rules: DescriptorRules;
  readonly metrics: ServiceMetrics;
  /** null: plaintext, which the configuration allows only when asked for explicitly. */
  readonly tls: GrpcTls | null;
  readonly logError: (message: string, error: unknown) => void;
  /**
   * The largest request accepted, in bytes; larger ones get RESOURCE_EXHAUSTED before decoding.
   * @default 4 MiB (grpc-js's default)
   */
  readonly maxRequestBytes?: number;
  /** @default GRPC_SERVER_LIMITS */
  readonly limits?: Partial<GrpcServerLimits>;
}

export interface RunningGrpcServer {
  readonly server: grpc.Server;
  /** The listening socket (its `maxConnections` is the connection cap). */
  readonly listener: NetServer;
  readonly port: number;
  /** Reports SERVING (a policy is in force) or NOT_SERVING on the health service. */
  setServing(isServing: boolean): void;
  stop(): Promise<void>;
}

type Unary = grpc.handleUnaryCall<unknown, unknown>;

/** A field path without its indexes (`descriptors[].entries[].value`): one series per field. */
function metricField(field: string): string {
  return field.replace(/\[\d+\]/g, "[]");
}

function shouldRateLimitHandler(options: GrpcServerOptions): Unary {
  const { metrics } = options;
  return (call, callback) => {
    const parsed = parseRateLimitRequest(call.request);
    if (!parsed.ok) {
      metrics.refused.add({ protocol: "rls", field: metricField(parsed.field) });
      metrics.calls.add({ protocol: "rls", domain: "invalid", answer: "INVALID_ARGUMENT" });
      callback({
        code: grpc.status.INVALID_ARGUMENT,
        details: `${parsed.field}: ${parsed.message}`,
      });
      return;
    }
    const domain = parsed.request.domain;
    const fail = (error: unknown) => {
      options.logError("ShouldRateLimit failed", error);
      metrics.calls.add({ protocol: "rls", domain, answer: "INTERNAL" });
      callback({ code: grpc.status.INTERNAL, details: "internal error" });
    };
    const respond = (answer: DescriptorsAnswer) => {
      switch (answer.kind) {
        case "invalid":
          metrics.refused.add({ protocol: "rls", field: metricField(answer.field) });
          metrics.calls.add({ protocol: "rls", domain, answer: "INVALID_ARGUMENT" });
          callback({
            code: grpc.status.INVALID_ARGUMENT,
            details: `${answer.field}: ${answer.message}`,
          });
          return;
        case "unavailable":
          metrics.calls.add({ protocol: "rls", domain, answer: "UNAVAILABLE" });
          callback({
            code: grpc.status.UNAVAILABLE,
            details: `limit ${answer.scope} fails closed and the limiter store cannot be reached`,
          });
          return;
        case "response":
          metrics.calls.add({ protocol: "rls", domain, answer: answer.message.overall_code });
          callback(null, encodeRlsResponse(answer.message));
          return;
        default: {
          const unknown: never = answer;
          throw new TypeError(`unknown answer ${JSON.stringify(unknown)}`);
        }
      }
    };
    let answer: DescriptorsAnswer | Promise<DescriptorsAnswer>;
    try {
      answer = decideDescriptors(parsed.request, options);
    } catch (error: unknown) {
      fail(error);
      return;
    }
    if (answer instanceof Promise) {
      answer.then(respond).catch(fail);
      return;
    }
    try {
      respond(answer);
    } catch (error: unknown) {
      fail(error);
    }
  };
}

/**
 * Envoy's service definition with a response serializer that sends bytes `rls-encode.ts` already
 * wrote as they are (anything else goes through the generic encoder).
 */
function encodingDefinition(): grpc.ServiceDefinition {
  const definition = rateLimitServiceDefinition();
  const method = definition.ShouldRateLimit;
  if (method === undefined) throw new Error("no ShouldRateLimit in the RLS definition");
  const generic = method.responseSerialize;
  return {
    ...definition,
    ShouldRateLimit: {
      ...method,
      responseSerialize: (value: unknown) => (Buffer.isBuffer(value) ? value : generic(value)),
    },
  };
}

/** Starts the gRPC server on `host:port` (0: a free port). */
export async function startGrpcServer(
  options: GrpcServerOptions,
  host: string,
  port: number,
): Promise<RunningGrpcServer> {
  const maxBytes = options.maxRequestBytes ?? 4 * 1024 * 1024;
  const limits = { ...GRPC_SERVER_LIMITS, ...options.limits };
  const server = new grpc.Server({
    "grpc.max_receive_message_length": maxBytes,
    "grpc.max_concurrent_streams": limits.maxConcurrentStreams,
    "grpc.max_connection_idle_ms": limits.idleTimeoutMs,
    "grpc.keepalive_time_ms": limits.keepaliveTimeMs,
    "grpc.keepalive_timeout_ms": limits.keepaliveTimeoutMs,
    "grpc-node.max_session_memory": limits.maxSessionMemoryMb,
  });
  server.addService(encodingDefinition(), {
    ShouldRateLimit: shouldRateLimitHandler(options),
  });
  const health = new HealthImplementation({ "": "NOT_SERVING", [RLS_SERVICE_NAME]: "NOT_SERVING" });
  health.addToServer(server);
  // TLS is ended here, not by grpc-js, so the handshake has a deadline; grpc-js then serves
  // each connection as given.
  const injector = server.createConnectionInjector(grpc.ServerCredentials.createInsecure());
  const sockets = new Set<Socket>();
  const accept = (socket: Socket) => {
    socket.on("error", () => socket.destroy());
    injector.injectConnection(socket);
  };
  const listener: NetServer =
    options.tls === null
      ? createNetServer(accept)
      : createTlsServer(
          {
            cert: options.tls.cert,
            key: options.tls.key,
            ALPNProtocols: ["h2"],
            handshakeTimeout: limits.handshakeTimeoutMs,
            ...(options.tls.clientCa === null
              ? {}
              : { ca: options.tls.clientCa, requestCert: true, rejectUnauthorized: true }),
          },
          accept,
        );
  // Every accepted socket, TLS or not yet, so stopping can end them all.
  listener.on("connection", (socket: Socket) => {
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
  });
  // A failed or timed-out handshake: the client's problem, and its socket is closed.
  listener.on("tlsClientError", (_error: Error, socket: Socket) => socket.destroy());
  listener.maxConnections = limits.maxConnections;
  listener.listen(port, host);
  await Promise.race([
    once(listener, "listening"),
    once(listener, "error").then(([error]) => Promise.reject(error)),
  ]);
  const address = listener.address();
  if (address === null || typeof address === "string") throw new Error("not listening on TCP");
  return {
    server,
    listener,
    port: address.port,
    setServing(isServing) {
      const status = isServing ? "SERVING" : "NOT_SERVING";
      health.setStatus("", status);
      health.setStatus(RLS_SERVICE_NAME, status);
    },
    async stop() {
      const closed = new Promise<void>((resolve) => listener.close(() => resolve()));
      await new Promise<void>((resolve) => {
        // Calls in flight finish; none is waited for longer than 5 s.
        const timer = setTimeout(() => {
          server.forceShutdown();
          for (const socket of sockets) socket.destroy();
          resolve();
        }, 5_000);
        server.tryShutdown(() => {
          clearTimeout(timer);
          resolve();
        });
      });
      for (const socket of sockets) socket.destroy();
      await closed;
    },
  };
}
