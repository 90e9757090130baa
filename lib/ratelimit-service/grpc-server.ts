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
}

export interface RunningGrpcServer {
  readonly server: grpc.Server;
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
  const server = new grpc.Server({
    "grpc.max_receive_message_length": maxBytes,
    "grpc.max_concurrent_streams": 1_000,
  });
  server.addService(encodingDefinition(), {
    ShouldRateLimit: shouldRateLimitHandler(options),
  });
  const health = new HealthImplementation({ "": "NOT_SERVING", [RLS_SERVICE_NAME]: "NOT_SERVING" });
  health.addToServer(server);
  const credentials =
    options.tls === null
      ? grpc.ServerCredentials.createInsecure()
      : grpc.ServerCredentials.createSsl(
          options.tls.clientCa,
          [{ cert_chain: options.tls.cert, private_key: options.tls.key }],
          options.tls.clientCa !== null,
        );
  const address = host.includes(":") ? `[${host}]:${port}` : `${host}:${port}`;
  const boundPort = await new Promise<number>((resolve, reject) => {
    server.bindAsync(address, credentials, (error, bound) =>
      error === null ? resolve(bound) : reject(error),
    );
  });
  return {
    server,
    port: boundPort,
    setServing(isServing) {
      const status = isServing ? "SERVING" : "NOT_SERVING";
      health.setStatus("", status);
      health.setStatus(RLS_SERVICE_NAME, status);
    },
    stop() {
      return new Promise((resolve) => {
        // Calls in flight finish; none is waited for longer than 5 s.
        const timer = setTimeout(() => server.forceShutdown(), 5_000);
        server.tryShutdown(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    },
  };
}
