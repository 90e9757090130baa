/**
 * `npm run bench -- ratelimit-service`: the rate-limit service's `ShouldRateLimit` against a no-op
 * grpc-js service that answers OK to the same client (`noop-rls-target.ts`), the most any service
 * on grpc-js can carry here. envoyproxy/ratelimit cannot be installed on this machine (no Go
 * toolchain or image is reachable), so the comparison is with the transport's own ceiling.
 *
 * Workloads, each at 64 calls in flight on one HTTP/2 channel (as one Envoy worker holds one):
 * - `admitted`: 1,000 customers of a wide tier in turn, every call admitted;
 * - `half rejected`: every other call for one of 1,000 customers of a tier that holds one call
 *   (`hits_addend` 10 against a capacity of 10), spent on its first call, so from then on half
 *   the calls are OVER_LIMIT;
 * - `hot key`: one customer of the wide tier, every call.
 *
 * Each run alternates the sides within each workload (a 1 s warm-up, then 3 s measured), so a
 * change in the machine's load falls on both alike; every ratio is per run, then the median.
 * Exactness in the same runs: no customer of the one-request tier is admitted more than once.
 *
 * Then nginx (Debian's, when installed) with `auth_request` to the service, configured by
 * docs/nginx-ratelimit.conf, against the same nginx proxying directly to the same upstream
 * (`upstream-target.ts`): autocannon at 64 connections, 1,000 customers admitted, alternating
 * per run. A subrequest per request is the architecture's own cost; the aim is at least 0.5x.
 */
import * as grpc from "@grpc/grpc-js";
import {
  exampleSnapshot,
  freePort,
  publishTestSnapshot,
  tokenBucket,
} from "@limitplane/enforcer/testing";
import autocannon from "autocannon";
import { Redis } from "ioredis";
import { rateLimitServiceClient } from "@/lib/ratelimit-service/rls-proto";
import { findNginx, type RunningNginx, startNginx } from "../test/support/nginx";
import { benchRedis, loadLine, MIN_RUNS, pairedRatios, summary } from "./fair";
import { Targets } from "./results";
import { startTargetProcess, stopTargetProcess, type TargetProcess } from "./target-process";

const IN_FLIGHT = 64;
const KEYS = 1_000;
const WARM_MS = 1_000;
const MEASURE_MS = 3_000;
const PREFIX = "lpbench-rls:";
const BENCH_SECRET = "bench-secret-0123456789abcdef0123456789";
/** The tight tier holds one call of this cost (the example's costliest class costs 10). */
const TIGHT_COST = 10;

type Workload = "admitted" | "half rejected" | "hot key";
const WORKLOADS: readonly Workload[] = ["admitted", "half rejected", "hot key"];

interface Trial {
  readonly perSecond: number;
  readonly p99Ms: number;
  /** OK answers per customer of the one-request tier. */
  readonly admittedTight: ReadonlyMap<string, number>;
}

interface Reply {
  readonly overall_code: string;
}

function requestFor(customerId: string, tier: string, hitsAddend = 0) {
  return {
    domain: "bench",
    hits_addend: hitsAddend,
    descriptors: [
      {
        entries: [
          { key: "customer_id", value: customerId },
          { key: "tier", value: tier },
        ],
      },
    ],
  };
}

/** The call for the `index`-th request of a workload in run `run`. */
function callOf(workload: Workload, run: number, side: string, index: number) {
  const key = index % KEYS;
  switch (workload) {
    case "admitted":
      return requestFor(`wide-${key}`, "wide");
    case "hot key":
      return requestFor("hot", "wide");
    case "half rejected":
      return index % 2 === 0
        ? requestFor(`wide-${key}`, "wide")
        : requestFor(`tight-${run}-${side}-${key}`, "tight", TIGHT_COST);
    default: {
      const unknown: never = workload;
      throw new Error(`unknown workload ${unknown}`);
    }
  }
}

/** Keeps `IN_FLIGHT` calls going for `durationMs`; counts those that finished in the window. */
async function drive(
  client: grpc.Client,
  next: (index: number) => ReturnType<typeof requestFor>,
  durationMs: number,
  isMeasured: boolean,
): Promise<Trial> {
  const method = (client as unknown as Record<string, unknown>).ShouldRateLimit;
  if (typeof method !== "function") throw new Error("no ShouldRateLimit");
  const latencies: number[] = [];
  const admittedTight = new Map<string, number>();
  let index = 0;
  let completed = 0;
  const startedMs = performance.now();
  const endMs = startedMs + durationMs;
  const loop = async () => {
    while (performance.now() < endMs) {
      const request = next(index++);
      const sentMs = performance.now();
      const reply = await new Promise<Reply>((resolve, reject) => {
        method.call(client, request, (error: grpc.ServiceError | null, value: Reply) =>
          error === null ? resolve(value) : reject(error),
        );
      });
      if (!isMeasured) continue;
      completed++;
      latencies.push(performance.now() - sentMs);
      const customer = request.descriptors[0]?.entries[0]?.value ?? "";
      if (customer.startsWith("tight-") && reply.overall_code === "OK") {
        admittedTight.set(customer, (admittedTight.get(customer) ?? 0) + 1);
      }
    }
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, loop));
  const elapsedSec = (performance.now() - startedMs) / 1000;
  latencies.sort((a, b) => a - b);
  return {
    perSecond: completed / elapsedSec,
    p99Ms: latencies[Math.floor(latencies.length * 0.99)] ?? Number.NaN,
    admittedTight,
  };
}

async function trial(address: string, workload: Workload, run: number, side: string) {
  const Client = rateLimitServiceClient();
  const client = new Client(address, grpc.credentials.createInsecure());
  try {
    await drive(client, (i) => callOf(workload, run, side, i), WARM_MS, false);
    // Measured on fresh tight customers: the warm-up spent others.
    return await drive(client, (i) => callOf(workload, run, `${side}m`, i), MEASURE_MS, true);
  } finally {
    client.close();
  }
}

export async function run(): Promise<void> {
  console.log(loadLine("at the start"));
  const redisServer = await benchRedis();
  const redis = new Redis(redisServer.url);
  const targets: TargetProcess[] = [];
  try {
    await publishTestSnapshot(
      redis,
      PREFIX,
      exampleSnapshot(
        (input) => {
          input.tiers.push(
            { name: "wide", displayName: "Wide", limit: tokenBucket(10_000_000, 10_000_000) },
            { name: "tight", displayName: "Tight", limit: tokenBucket(TIGHT_COST, 0.000_1) },
          );
          input.ceilings.perCustomer = tokenBucket(10_000_000, 10_000_000);
        },
        { version: 1, compiledAt: new Date().toISOString() },
      ),
    );
    const serviceHttpPort = await freePort();
    const service = await startTargetProcess(
      "scripts/ratelimit-service.ts",
      ["--expected-gateways", "1", "--id", "bench-rls"],
      "ratelimit-service",
      {
        REDIS_URL: redisServer.url,
        REDIS_KEY_PREFIX: PREFIX,
        RATELIMIT_SERVICE_GRPC_PORT: "0",
        RATELIMIT_SERVICE_HTTP_PORT: String(serviceHttpPort),
        RATELIMIT_SERVICE_GRPC_PLAINTEXT: "true",
        RATELIMIT_SERVICE_SECRET: BENCH_SECRET,
      },
    );
    targets.push(service);
    const noop = await startTargetProcess("noop-rls-target.ts", [], "noop-rls");
    targets.push(noop);
    const floor = await startTargetProcess("noop-rls-target.ts", [], "noop-rls-same", {
      NOOP_RLS_ANSWERS: JSON.stringify(await sampleAnswers(service.url.host)),
    });
    targets.push(floor);
    const sides = [
      { name: "service", address: service.url.host },
      { name: "no-op", address: noop.url.host },
      { name: "floor", address: floor.url.host },
    ];

    const perSecond = new Map<string, number[]>();
    const p99 = new Map<string, number[]>();
    let overAdmitted = 0;
    let tightCustomers = 0;
    const add = (map: Map<string, number[]>, key: string, value: number) => {
      map.set(key, [...(map.get(key) ?? []), value]);
    };
    for (let runIndex = 0; runIndex < MIN_RUNS; runIndex++) {
      for (const workload of WORKLOADS) {
        const order = runIndex % 2 === 0 ? sides : [...sides].reverse();
        for (const side of order) {
          const result = await trial(side.address, workload, runIndex, side.name);
          add(perSecond, `${workload}/${side.name}`, result.perSecond);
          add(p99, `${workload}/${side.name}`, result.p99Ms);
          if (side.name === "service") {
            tightCustomers += result.admittedTight.size;
            for (const count of result.admittedTight.values()) if (count > 1) overAdmitted++;
          }
        }
      }
      console.log(`run ${runIndex + 1}/${MIN_RUNS} done; ${loadLine("now")}`);
    }

    console.log("\nShouldRateLimit at 64 in flight (median [min-max] over the runs)");
    for (const workload of WORKLOADS) {
      for (const side of sides) {
        const key = `${workload}/${side.name}`;
        console.log(
          `  ${key.padEnd(24)} ${summary(perSecond.get(key) ?? [], 0)} calls/s   p99 ${summary(p99.get(key) ?? [])} ms`,
        );
      }
    }
    printFloors(perSecond);
    const result = new Targets();
    for (const workload of WORKLOADS) {
      const ours = perSecond.get(`${workload}/service`) ?? [];
      const theirs = perSecond.get(`${workload}/no-op`) ?? [];
      result.atLeast(`${workload}: throughput vs no-op`, pairedRatios(ours, theirs), 0.7);
      result.atMost(
        `${workload}: p99 vs no-op`,
        pairedRatios(p99.get(`${workload}/service`) ?? [], p99.get(`${workload}/no-op`) ?? []),
        1.5,
      );
    }
    result.holds(
      "exactness: one-request customers admitted at most once",
      `${overAdmitted} over of ${tightCustomers} admitted`,
      overAdmitted === 0,
      "0 over",
    );
    await benchNginx(result, serviceHttpPort);
    result.print("ratelimit-service targets");
    console.log(loadLine("at the end"));
  } finally {
    for (const target of targets) await stopTargetProcess(target);
    redis.disconnect();
    await redisServer.stop();
  }
}

/**
 * The service's own replies, decoded, for an admission and a rejection (a tight customer's second
 * call), with `raw_body` as base64: what the floor no-op answers with.
 */
async function sampleAnswers(address: string): Promise<Record<"ok" | "over", unknown>> {
  const Client = rateLimitServiceClient();
  const client = new Client(address, grpc.credentials.createInsecure());
  const method = (client as unknown as Record<string, unknown>).ShouldRateLimit;
  if (typeof method !== "function") throw new Error("no ShouldRateLimit");
  const call = (request: ReturnType<typeof requestFor>) =>
    new Promise<Reply & { raw_body: Buffer }>((resolve, reject) => {
      method.call(client, request, (error: grpc.ServiceError | null, value: Reply) =>
        error === null ? resolve(value as Reply & { raw_body: Buffer }) : reject(error),
      );
    });
  try {
    const ok = await call(requestFor("wide-sample", "wide"));
    await call(requestFor("tight-sample", "tight", TIGHT_COST));
    const over = await call(requestFor("tight-sample", "tight", TIGHT_COST));
    if (ok.overall_code !== "OK" || over.overall_code !== "OVER_LIMIT") {
      throw new Error(`unexpected sample answers: ${ok.overall_code}, ${over.overall_code}`);
    }
    const encode = (reply: Reply & { raw_body: Buffer }) => ({
      ...reply,
      raw_body: reply.raw_body.toString("base64"),
    });
    return { ok: encode(ok), over: encode(over) };
  } finally {
    client.close();
  }
}

/**
 * How far each workload is from its floor: the no-op that answers the service's own bytes
 * (`noop-rls-target.ts` with `NOOP_RLS_ANSWERS`). When the floor itself is below the 0.7x aim,
 * no service that must send these answers on grpc-js here can meet it.
 */
function printFloors(perSecond: ReadonlyMap<string, readonly number[]>): void {
  console.log(
    "\nThe floor: a no-op answering the service's own bytes (ratios per run, median [min-max])",
  );
  for (const workload of WORKLOADS) {
    const service = perSecond.get(`${workload}/service`) ?? [];
    const bare = perSecond.get(`${workload}/no-op`) ?? [];
    const floor = perSecond.get(`${workload}/floor`) ?? [];
    console.log(
      `  ${workload.padEnd(14)} floor/no-op ${summary(pairedRatios(floor, bare))}x   service/floor ${summary(pairedRatios(service, floor))}x   service/no-op ${summary(pairedRatios(service, bare))}x`,
    );
  }
}

/** Answers other than 200 over the nginx trials, by status. */
const statusCounts = new Map<string, number>();

/** One autocannon trial against `url`: requests a second and p99 latency. */
async function hammer(
  url: string,
  durationSec: number,
): Promise<{ perSecond: number; p99Ms: number; non2xx: number }> {
  let next = 0;
  const result = await autocannon({
    url,
    connections: IN_FLIGHT,
    duration: durationSec,
    requests: [
      {
        method: "GET",
        path: "/v1/things",
        setupRequest: (request: autocannon.Request) => {
          const customer = `nginx-${next++ % KEYS}`;
          return {
            ...request,
            headers: { ...request.headers, "x-customer-id": customer, "x-tier": "wide" },
          };
        },
      },
    ],
  });
  for (const [status, stats] of Object.entries(result.statusCodeStats ?? {})) {
    if (status !== "200")
      statusCounts.set(status, (statusCounts.get(status) ?? 0) + (stats.count ?? 0));
  }
  return { perSecond: result.requests.average, p99Ms: result.latency.p99, non2xx: result.non2xx };
}

/** nginx with auth_request to the service against nginx proxying directly. */
async function benchNginx(result: Targets, httpPort: number): Promise<void> {
  const binary = findNginx();
  if (binary === null) {
    console.log("\nnginx is not installed (apt-get install nginx): its comparison is left out");
    return;
  }
  const upstream = await startTargetProcess("upstream-target.ts", [], "upstream");
  const noopCheck = await startTargetProcess("upstream-target.ts", [], "noop-check", {
    UPSTREAM_HEADERS: JSON.stringify(await sampleCheckHeaders(httpPort)),
  });
  const running: RunningNginx[] = [];
  try {
    const app = Number(upstream.url.port);
    const direct = startNginx(
      binary,
      { nginx: await freePort(), app, service: null },
      BENCH_SECRET,
    );
    running.push(direct);
    const checked = startNginx(
      binary,
      { nginx: await freePort(), app, service: httpPort },
      BENCH_SECRET,
    );
    running.push(checked);
    const floorNginx = startNginx(
      binary,
      { nginx: await freePort(), app, service: Number(noopCheck.url.port) },
      BENCH_SECRET,
    );
    running.push(floorNginx);
    const sides = [
      { name: "auth_request", url: checked.url },
      { name: "direct", url: direct.url },
      { name: "no-op check", url: floorNginx.url },
    ];
    for (const side of sides) {
      await waitForAnswer(side.url);
    }
    const perSecond = new Map<string, number[]>();
    const p99 = new Map<string, number[]>();
    let non2xx = 0;
    for (let runIndex = 0; runIndex < MIN_RUNS; runIndex++) {
      const order = runIndex % 2 === 0 ? sides : [...sides].reverse();
      for (const side of order) {
        await hammer(side.url, WARM_MS / 1000);
        const trialResult = await hammer(side.url, MEASURE_MS / 1000);
        non2xx += trialResult.non2xx;
        perSecond.set(side.name, [...(perSecond.get(side.name) ?? []), trialResult.perSecond]);
        p99.set(side.name, [...(p99.get(side.name) ?? []), trialResult.p99Ms]);
      }
    }
    console.log("\nnginx at 64 connections (median [min-max] over the runs)");
    for (const side of sides) {
      console.log(
        `  ${side.name.padEnd(14)} ${summary(perSecond.get(side.name) ?? [], 0)} requests/s   p99 ${summary(p99.get(side.name) ?? [])} ms`,
      );
    }
    const floorRatios = pairedRatios(
      perSecond.get("no-op check") ?? [],
      perSecond.get("direct") ?? [],
    );
    console.log(
      `  the floor: auth_request to a check that decides nothing and answers the service's headers reaches ${summary(floorRatios)}x direct; the service reaches ${summary(pairedRatios(perSecond.get("auth_request") ?? [], perSecond.get("no-op check") ?? []))}x that floor`,
    );
    result.atLeast(
      "nginx: auth_request vs direct throughput",
      pairedRatios(perSecond.get("auth_request") ?? [], perSecond.get("direct") ?? []),
      0.5,
    );
    const errorLines = checked
      .errors()
      .split("\n")
      .filter((line) => /\[(error|crit)\]/.test(line));
    if (errorLines.length > 0) {
      console.log(`nginx logged ${errorLines.length} errors; the first: ${errorLines[0]}`);
    }
    const byStatus = [...statusCounts].map(([status, count]) => `${count}x${status}`).join(", ");
    result.holds(
      "nginx: answers other than 2xx",
      non2xx === 0 ? "0" : `${non2xx} (${byStatus})`,
      non2xx === 0,
      "0",
    );
  } finally {
    for (const nginx of running) await nginx.stop();
    await stopTargetProcess(upstream);
    await stopTargetProcess(noopCheck);
  }
}

/** The rate-limit headers the service's `/check` answers an admitted request with. */
async function sampleCheckHeaders(httpPort: number): Promise<Record<string, string>> {
  const response = await fetch(`http://127.0.0.1:${httpPort}/check`, {
    headers: {
      "x-limitplane-secret": BENCH_SECRET,
      "x-customer-id": "sample",
      "x-tier": "wide",
      "x-forwarded-method": "GET",
      "x-forwarded-uri": "/v1/things",
    },
  });
  await response.arrayBuffer();
  if (response.status !== 200) throw new Error(`/check answered ${response.status}`);
  const headers: Record<string, string> = {};
  for (const [name, value] of response.headers) {
    if (name.startsWith("ratelimit") || name.startsWith("x-ratelimit")) headers[name] = value;
  }
  return headers;
}

async function waitForAnswer(url: string): Promise<void> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const status = await fetch(`${url}/v1/things`, {
      headers: { "x-customer-id": "warm", "x-tier": "wide" },
    }).then(
      (response) => response.status,
      () => 0,
    );
    if (status === 200) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`${url} did not answer 200`);
}
