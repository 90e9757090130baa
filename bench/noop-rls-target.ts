/**
 * The `ratelimit-service` bench's baselines: a grpc-js server with Envoy's `RateLimitService`
 * (the same protos, loaded the same way) that decides nothing. Prints
 * `listening on grpc://127.0.0.1:<port>`; stops on SIGTERM.
 *
 * - Bare (no `NOOP_RLS_ANSWERS`): answers OK with one bare status per descriptor (6 bytes), what
 *   grpc-js can carry on this machine: the ceiling any service built on it can reach.
 * - Same answers (`NOOP_RLS_ANSWERS`: JSON `{ ok, over }`, the service's own decoded replies for
 *   an admission and a rejection): answers every call with the bytes the service would send,
 *   encoded once at start-up, OVER_LIMIT for a `tight` customer's second and later calls (as the
 *   bench's tight tier holds one call). It costs what answering these bytes costs without
 *   deciding anything: the floor under the service, given the response it must send.
 */
import * as grpc from "@grpc/grpc-js";
import { rateLimitServiceDefinition } from "@/lib/ratelimit-service/rls-proto";

interface Request {
  readonly descriptors: readonly { readonly entries: readonly { readonly value: string }[] }[];
}

const definition = rateLimitServiceDefinition();
const found = definition.ShouldRateLimit;
if (found === undefined) throw new Error("no ShouldRateLimit");
const method = found;
const answersText = process.env.NOOP_RLS_ANSWERS;

function encodedReply(reply: { raw_body: string } & Record<string, unknown>): Buffer {
  return method.responseSerialize({ ...reply, raw_body: Buffer.from(reply.raw_body, "base64") });
}

let handler: grpc.handleUnaryCall<Request, unknown>;
if (answersText === undefined) {
  handler = (call, callback) => {
    callback(null, {
      overall_code: "OK",
      statuses: call.request.descriptors.map(() => ({ code: "OK" })),
    });
  };
} else {
  const answers = JSON.parse(answersText) as Record<"ok" | "over", { raw_body: string }>;
  const ok = encodedReply(answers.ok);
  const over = encodedReply(answers.over);
  const seen = new Set<string>();
  handler = (call, callback) => {
    const entries = call.request.descriptors[0]?.entries;
    const customer = entries?.[0]?.value ?? "";
    if (entries?.[1]?.value !== "tight") {
      callback(null, ok);
    } else if (seen.has(customer)) {
      callback(null, over);
    } else {
      seen.add(customer);
      callback(null, ok);
    }
  };
}

const server = new grpc.Server({ "grpc.max_concurrent_streams": 1_000 });
server.addService(
  {
    ...definition,
    // Bytes encoded at start-up go out as they are.
    ShouldRateLimit: {
      ...method,
      responseSerialize: (value: unknown) =>
        Buffer.isBuffer(value) ? value : method.responseSerialize(value),
    },
  },
  { ShouldRateLimit: handler },
);
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
