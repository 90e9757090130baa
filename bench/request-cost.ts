/**
 * Request-cost suite: what the enforcer's own JavaScript costs one request of a gateway, in
 * process, for the two answers a busy gateway gives without Redis (a leased admission and a
 * cached denial) and for the two alternating (the HTTP suite's half-rejected mix), and what it
 * allocates.
 *
 * The Node middleware (`createNodeMiddleware`) is called with request
 * objects made once and a response that only counts what it is given, so Node's HTTP stack
 * (parsing, `setHeader`, the socket write) is left out: the figure is the limiter's part. Each
 * path's requests go to 1,000 customers in turn, one pass over them every {@link PASS_MS} ms,
 * so each customer sends about as often as in the HTTP suite and its lease refills arrive in
 * time, as in a server (a tight loop would outrun the refills and time Redis calls instead).
 * Each request is
 * timed alone (`performance.now`, which allocates nothing; one reading's cost is taken off), in
 * two settings that alternate:
 * - warm: nothing else runs between two requests;
 * - cold: {@link TOUCHED_BYTES} of other memory read before each request (untimed), as a
 *   server's HTTP parsing, buffers and other code push the enforcer's data and code out of the
 *   CPU's caches between two of its decisions.
 * Bytes allocated per request: the young generation's growth over chunks of
 * {@link ALLOCATION_CHUNK} requests that no scavenge interrupted (lease refills answered
 * meanwhile included), which the garbage collector pays for later, in the server's time.
 *
 * `identify` is an in-memory key lookup (an identity made once per customer, as a gateway's API
 * key cache holds them), so the bytes are the enforcer's own.
 *
 * Target: a cached denial allocates at most 128 bytes (a flood of rejections must cost the
 * collector next to nothing); the rest is information. Redis: a redis-server of the bench's own,
 * or `BENCH_REDIS_URL` (used to grant the leases and to reject the tight customers before
 * measuring).
 */
import { randomBytes } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { getHeapSpaceStatistics } from "node:v8";
import { createEnforcer, createNodeMiddleware, type EnforcerLogger } from "@limitplane/enforcer";
import { deleteKeysUnder, publishTestSnapshot } from "@limitplane/enforcer/testing";
import { Redis } from "ioredis";
import {
  benchRedis,
  describeRedis,
  loadLine,
  MIN_RUNS,
  median,
  pairedRatios,
  summary,
} from "./fair";
import { BENCH_LIMITS, benchSnapshot } from "./http-policy";
import { Targets } from "./results";
import { customerOf } from "./serve-target";

const CUSTOMERS = 1_000;
const ROUNDS = Math.max(MIN_RUNS, 7);
/** Passes over the customers per round and setting, and how long each lasts, pause included. */
const PASSES = 5;
const PASS_MS = 60;
/**
 * Unmeasured passes before each path's measured ones: the other paths ran meanwhile, and a
 * lease idle that long lapses; its demand counts whole lifetimes (a second), so a subject is
 * leased again only after a lifetime of steady requests. 1.5 s of passes.
 */
const WARM_UP_PASSES = Math.ceil(1_500 / PASS_MS);
/** Read between two cold requests (see the header). */
const TOUCHED_BYTES = 512 * 1024;
const CACHE_LINE_BYTES = 64;
/** Requests per allocation sample. */
const ALLOCATION_CHUNK = 100;
const silentLogger: EnforcerLogger = { log() {} };

/** The fields of a request the middleware and the bench's `identify` read. */
function requestFor(customerId: string, tier: string): IncomingMessage {
  const request = {
    method: "GET",
    url: "/v1/things",
    headers: { authorization: `Bearer ${customerId}`, "x-tier": tier },
    socket: { remoteAddress: "127.0.0.1" },
  };
  return request as unknown as IncomingMessage;
}

/** A response that keeps a running length of what it is given (so nothing is optimized away). */
class CountingResponse {
  bytes = 0;
  /** Responses the middleware wrote itself (rejections). */
  written = 0;
  setHeader(name: string, value: string): this {
    this.bytes += name.length + value.length;
    return this;
  }
  writeHead(_status: number, headers: readonly string[]): this {
    this.written++;
    this.bytes += headers.length;
    return this;
  }
  end(body: string): this {
    this.bytes += body.length;
    return this;
  }
}

function youngGenerationBytes(): number {
  return getHeapSpaceStatistics().find((space) => space.space_name === "new_space")
    ?.space_used_size as number;
}

export async function run(): Promise<void> {
  console.log(loadLine("at start"));
  const redisServer = await benchRedis();
  const redis = new Redis(redisServer.url);
  const prefix = `bench:rc${randomBytes(3).toString("hex")}:`;
  await publishTestSnapshot(redis, prefix, benchSnapshot(1));
  const enforcer = await createEnforcer({
    expectedGateways: 1,
    redis: { url: redisServer.url, keyPrefix: prefix },
    local: {},
    logger: silentLogger,
  });
  try {
    if (!enforcer.status().isReady) throw new Error("the enforcer has no policy");
    console.log(`Redis: ${describeRedis(redisServer)}`);
    // The identities by Authorization header, made once: looking one up allocates nothing.
    const identities = new Map<string, ReturnType<typeof customerOf>>();
    const middleware = createNodeMiddleware(enforcer, {
      identify: (req) => {
        const authorization = req.headers.authorization ?? "";
        let identity = identities.get(authorization);
        if (identity === undefined) {
          identity = customerOf(req);
          identities.set(authorization, identity);
        }
        return identity;
      },
    });
    const counting = new CountingResponse();
    const response = counting as unknown as ServerResponse;
    let admitted = 0;
    /** Requests answered so far, admitted or rejected: one that moves neither waited on Redis. */
    const answered = () => admitted + counting.written;
    const next = () => {
      admitted++;
    };
    // The harness's own bytes a request (the loop, the timing, the counting response), with a
    // handler that writes one constant 429: taken off the denial's bytes for its target.
    const constantHeaders = ["Content-Length", "2", "Retry-After", "1"];
    const constantRejection = (_req: IncomingMessage, res: ServerResponse) => {
      res.writeHead(429, constantHeaders);
      res.end("{}");
    };
    const paths = [
      {
        name: "leased admission (1,000 customers in turn, each holding a lease)",
        requests: Array.from({ length: CUSTOMERS }, (_, i) => requestFor(`wide-${i}`, "wide")),
        handle: middleware,
      },
      {
        name: "cached denial (1,000 customers in turn, each over its daily limit)",
        requests: Array.from({ length: CUSTOMERS }, (_, i) => requestFor(`tight-${i}`, "tight")),
        handle: middleware,
      },
      {
        // The HTTP suite's half-rejected mix, on customers of their own.
        name: "the two alternating (500 other customers of each kind)",
        requests: Array.from({ length: CUSTOMERS }, (_, i) =>
          i % 2 === 0
            ? requestFor(`wide-${CUSTOMERS + (i >> 1)}`, "wide")
            : requestFor(`tight-${CUSTOMERS + (i >> 1)}`, "tight"),
        ),
        handle: middleware,
      },
      {
        name: "the harness alone (a handler that writes one constant 429, no enforcer)",
        requests: Array.from({ length: CUSTOMERS }, (_, i) => requestFor(`tight-${i}`, "tight")),
        handle: constantRejection,
      },
    ];
    /** Per path, which of its requests come from a customer over its day (never admitted). */
    const tightOf = new Map<readonly IncomingMessage[], boolean[]>(
      paths.map((path) => [
        path.requests,
        path.requests.map((request) => request.headers["x-tier"] === "tight"),
      ]),
    );

    // Before measuring: spend every tight customer's day (the store's rejections then sit in
    // the denial cache), and send wide customers' requests until their leases answer them all.
    for (let i = 0; i < CUSTOMERS + CUSTOMERS / 2; i++) {
      for (let n = 0; n <= BENCH_LIMITS.tightPerDay; n++) {
        await enforcer.check({
          customerId: `tight-${i}`,
          tier: "tight",
          method: "GET",
          path: "/v1/things",
        });
      }
    }
    for (const path of paths) {
      let fromStore = Number.POSITIVE_INFINITY;
      for (let round = 0; round < 200 && fromStore > 0; round++) {
        fromStore = 0;
        for (const request of path.requests) {
          const before = answered();
          path.handle(request, response, next);
          // A request the middleware did not answer in this turn waited on the store.
          if (answered() === before) fromStore++;
        }
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      if (fromStore > 0) throw new Error(`${path.name}: ${fromStore} requests still went to Redis`);
    }

    const touched = new Float64Array(TOUCHED_BYTES / 8);
    const stride = CACHE_LINE_BYTES / 8;
    let sink = 0;
    const touchOtherMemory = () => {
      for (let i = 0; i < touched.length; i += stride) sink += touched[i] as number;
    };
    // `performance.now`, not `process.hrtime.bigint`: a double allocates nothing, so the
    // allocation figure is the enforcer's alone.
    const clock = performance;

    interface Tally {
      ms: number;
      requests: number;
      /** Requests the middleware did not answer at once (they waited on Redis). */
      fromStore: number;
      /** Bytes per request of the chunks no scavenge interrupted. */
      readonly bytes: number[];
    }

    /**
     * One pass over the customers, one request each, cold (other memory read before each) or
     * warm, timed so that every pass lasts PASS_MS in all: every customer sends at one steady
     * rate in both settings, about as often as in the HTTP suite, and its lease refills arrive
     * in time, as in a server.
     */
    const pass = async (
      { requests, handle }: (typeof paths)[number],
      isCold: boolean,
      tally: Tally,
    ) => {
      const passStartMs = clock.now();
      const isTight = tightOf.get(requests) ?? [];
      for (let chunk = 0; chunk < requests.length; chunk += ALLOCATION_CHUNK) {
        const before = youngGenerationBytes();
        const end = Math.min(requests.length, chunk + ALLOCATION_CHUNK);
        for (let i = chunk; i < end; i++) {
          if (isCold) touchOtherMemory();
          const answeredBefore = answered();
          const admittedBefore = admitted;
          const startMs = clock.now();
          handle(requests[i] as IncomingMessage, response, next);
          tally.ms += clock.now() - startMs;
          tally.requests++;
          if (answered() === answeredBefore) tally.fromStore++;
          // Exactness: a customer over its day is never admitted.
          if (admitted !== admittedBefore && isTight[i] === true) {
            throw new Error("a tight customer over its daily limit was admitted");
          }
        }
        const after = youngGenerationBytes();
        // A scavenge in between empties the young generation: that chunk says nothing.
        if (after > before) tally.bytes.push((after - before) / (end - chunk));
      }
      const leftMs = PASS_MS - (clock.now() - passStartMs);
      await new Promise((resolve) => setTimeout(resolve, Math.max(1, leftMs)));
    };

    // Rounds alternate the paths and, within a path, the settings. The first round warms up.
    const newTally = (): Tally => ({ ms: 0, requests: 0, fromStore: 0, bytes: [] });
    const rounds = paths.map(() => ({ warm: [] as Tally[], cold: [] as Tally[] }));
    for (let round = -1; round < ROUNDS; round++) {
      for (const [index, path] of paths.entries()) {
        for (let n = 0; n < WARM_UP_PASSES; n++) await pass(path, false, newTally());
        for (const isCold of [false, true]) {
          const tally = newTally();
          for (let n = 0; n < PASSES; n++) await pass(path, isCold, tally);
          if (round >= 0) rounds[index]?.[isCold ? "cold" : "warm"].push(tally);
        }
      }
    }

    // One reading's cost: the fastest of a few batches (the first ones also warm the loop up).
    const timerNs = (() => {
      const samples = 100_000;
      let fastest = Number.POSITIVE_INFINITY;
      for (let batch = 0; batch < 7; batch++) {
        const startMs = clock.now();
        for (let n = 0; n < samples; n++) sink += clock.now();
        fastest = Math.min(fastest, ((clock.now() - startMs) / samples) * 1e6);
      }
      return fastest;
    })();
    console.log(
      `\nThe enforcer's JavaScript per request (the Node middleware with an identify that looks identities up; Node's HTTP stack left out), median [min-max] of ${ROUNDS} alternating rounds, each ${PASSES} passes over the ${CUSTOMERS.toLocaleString("en-US")} customers, one every ${PASS_MS} ms; cold: ${TOUCHED_BYTES / 1024} KiB of other memory read before each request; a clock read (${timerNs.toFixed(0)} ns) taken off each`,
    );
    const targets = new Targets();
    for (const [index, path] of paths.entries()) {
      const { warm = [], cold = [] } = rounds[index] ?? {};
      const nsOf = (tallies: readonly Tally[]) =>
        tallies.map((t) => (t.ms / t.requests) * 1e6 - timerNs);
      const all = [...warm, ...cold];
      const sent = all.reduce((sum, t) => sum + t.requests, 0);
      const fromStore = all.reduce((sum, t) => sum + t.fromStore, 0);
      console.log(
        `  ${path.name}: ${(((sent - fromStore) / sent) * 100).toFixed(1)} % answered without waiting on Redis`,
      );
      console.log(
        `    warm ${summary(nsOf(warm), 0)} ns   cold ${summary(nsOf(cold), 0)} ns (${summary(pairedRatios(nsOf(cold), nsOf(warm)))}x warm)   allocates ${summary(
          all.flatMap((t) => t.bytes),
          0,
        )} bytes a request`,
      );
    }
    const bytesOf = (index: number) => {
      const { warm = [], cold = [] } = rounds[index] ?? {};
      return [...warm, ...cold].flatMap((t) => t.bytes);
    };
    const harnessBytes = median(bytesOf(3));
    console.log(
      `  the denial's bytes less the harness's (${harnessBytes.toFixed(0)} B a request, its median): ${summary(
        bytesOf(1).map((bytes) => bytes - harnessBytes),
        0,
      )} bytes a request`,
    );
    targets.atMost(
      "cached denial: bytes allocated per request (the Node middleware and the enforcer; the harness's own taken off)",
      bytesOf(1).map((bytes) => bytes - harnessBytes),
      128,
      " B",
    );
    targets.print("request-cost targets");
    if (sink < 0 || (response as unknown as CountingResponse).bytes < 0) {
      throw new Error("unreachable: keeps the loops from being optimized away");
    }
  } finally {
    await enforcer.stop();
    await deleteKeysUnder(redis, prefix);
    redis.disconnect();
    await redisServer.stop();
  }
  console.log(loadLine("at end"));
}
