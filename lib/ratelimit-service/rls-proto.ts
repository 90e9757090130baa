/**
 * Envoy's rate limit service protocol, loaded from the official protos that ship inside the npm
 * package `@grpc/grpc-js-xds` (its `deps/` tree: envoy-api, xds, protoc-gen-validate,
 * googleapis), so the messages are exactly Envoy's and nothing is copied here. Used by the
 * service, and by the tests and the benchmark to build a real client.
 *
 * Decoding options: `keepCase` (proto field names, `hits_addend`), enums as their names, 64-bit
 * numbers as JS numbers, and defaults filled in, so an absent field arrives as its zero value.
 */
import { createRequire } from "node:module";
import path from "node:path";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";

/** The fully qualified service name, as gRPC health checks and Envoy's config spell it. */
export const RLS_SERVICE_NAME = "envoy.service.ratelimit.v3.RateLimitService";

const require = createRequire(import.meta.url);

/** The directory of the protos that ship with `@grpc/grpc-js-xds`. */
function protoRoot(): string {
  return path.join(path.dirname(require.resolve("@grpc/grpc-js-xds/package.json")), "deps");
}

let loaded: grpc.ServiceDefinition | null = null;

/** The `RateLimitService` definition (loaded once per process). */
export function rateLimitServiceDefinition(): grpc.ServiceDefinition {
  if (loaded !== null) return loaded;
  const root = protoRoot();
  const definition = protoLoader.loadSync("envoy/service/ratelimit/v3/rls.proto", {
    keepCase: true,
    longs: Number,
    enums: String,
    defaults: true,
    oneofs: true,
    includeDirs: ["envoy-api", "xds", "protoc-gen-validate", "googleapis"].map((dir) =>
      path.join(root, dir),
    ),
  });
  const service = definition[RLS_SERVICE_NAME];
  if (service === undefined || !("ShouldRateLimit" in service)) {
    throw new Error(`${RLS_SERVICE_NAME} not found in the protos of @grpc/grpc-js-xds`);
  }
  loaded = service as grpc.ServiceDefinition;
  return loaded;
}

/** A client constructor for the service (tests, benchmark, a smoke check). */
export function rateLimitServiceClient(): grpc.ServiceClientConstructor {
  return grpc.makeGenericClientConstructor(rateLimitServiceDefinition(), "RateLimitService");
}
