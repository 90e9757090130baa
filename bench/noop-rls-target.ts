/**
 * The `ratelimit-service` bench's baseline: a grpc-js server with Envoy's `RateLimitService`
 * (the same protos, loaded the same way) that answers OK to every call without deciding anything,
 * one status per descriptor. What grpc-js can carry on this machine is the ceiling any service
 * built on it can reach. Prints `listening on grpc://127.0.0.1:<port>`; stops on SIGTERM.
 */
import * as grpc from "@grpc/grpc-js";
import { rateLimitServiceDefinition } from "@/lib/ratelimit-service/rls-proto";

const server = new grpc.Server({ "grpc.max_concurrent_streams": 1_000 });
server.addService(rateLimitServiceDefinition(), {
  ShouldRateLimit: (
    call: grpc.ServerUnaryCall<{ descriptors: unknown[] }, unknown>,
    callback: grpc.sendUnaryData<unknown>,
  ) => {
    callback(null, {
      overall_code: "OK",
      statuses: call.request.descriptors.map(() => ({ code: "OK" })),
    });
  },
});
const port = await new Promise<number>((resolve, reject) => {
  server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (error, bound) =>
    error === null ? resolve(bound) : reject(error),
  );
});
console.log(`noop-rls listening on grpc://127.0.0.1:${port}`);
process.once("SIGTERM", () => {
  server.forceShutdown();
  process.exit(0);
});
