/**
 * Outbound budgets: three crawler processes share a budget of 10 requests a second per host,
 * burst 1, over 5 hosts, FETCHES (default 100) fetches per host, against a local HTTP provider
 * that records when each request arrives. Each implementation runs the same scenario in turn
 * (bench/outbound-worker.ts), in the order limitplane, bottleneck, rlf-queue, then reversed:
 *
 * - limitplane: `createOutboundLimiter`, a turn reserved in Redis per call;
 * - bottleneck: Bottleneck 2.19.5 with its Redis clustering (ioredis), `minTime: 100` per host,
 *   its best documented configuration for a shared rate;
 * - rlf-queue: rate-limiter-flexible's `RateLimiterQueue` over `RateLimiterRedis`, 10 points per
 *   second per host (its limiter has no "burst 1 at 10 per second", so a second's 10 may come
 *   at once).
 *
 * Per implementation: the provider's worst 1 s window on any host (aim for ours: at most the
 * bucket's bound, capacity + rate x 1 s = 11), throughput as a share of the quota (calls per host
 * over the span from a host's first to its last arrival, against 10 a second; aim at least 0.98),
 * Redis calls per completed call on the limiter's own Redis (commands clients sent, counted with
 * MONITOR, which tells them from those scripts ran; the job counters live in a second Redis; aim
 * at most Bottleneck's), and the crawl's total time against
 * the ideal FETCHES / 10 s (aim within 5 %). Then concurrency: acquire+release pairs a second in
 * this process, 32 loops for 3 s, ours (a budget of 32 slots and no rate) against Bottleneck's
 * `maxConcurrent: 32` in clustering mode, 3 rounds alternating (aim at least 1x).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { createServer } from "node:http";
import path from "node:path";
import { createInterface } from "node:readline";
import { createOutboundLimiter } from "@limitplane/enforcer/callers";
import { OwnRedisServer } from "@limitplane/enforcer/testing";
import Bottleneck from "bottleneck";
import { Redis } from "ioredis";
import { benchRedis, describeRedis, loadLine, median } from "./fair";
import { Targets } from "./results";

const WORKER = path.join(import.meta.dirname, "outbound-worker.ts");
const HOSTS = ["a.example", "b.example", "c.example", "d.example", "e.example"];
const FETCHES = Number(process.env.BENCH_OUTBOUND_FETCHES ?? 100);
const RATE_PER_SEC = 10;
const BUCKET_BOUND_1S = 1 + RATE_PER_SEC;
const IMPLS = ["limitplane", "bottleneck", "rlf-queue"] as const;
type Impl = (typeof IMPLS)[number];

interface CrawlFigures {
  readonly worstWindow: number;
  readonly share: number;
  /** Commands clients sent to the limiter's Redis per completed call: round trips. */
  readonly redisPerCall: number;
  /** Commands the limiter's scripts ran per completed call. */
  readonly inScriptsPerCall: number;
  readonly totalVsIdeal: number;
}

function worstWindow(sorted: readonly number[], windowMs: number): number {
  let most = 0;
  let end = 0;
  for (let start = 0; start < sorted.length; start++) {
    const from = sorted[start] ?? 0;
    while (end < sorted.length && (sorted[end] ?? 0) < from + windowMs) end++;
    most = Math.max(most, end - start);
  }
  return most;
}

async function crawl(
  impl: Impl,
  limitUrl: string,
  jobsUrl: string,
  round: number,
): Promise<CrawlFigures> {
  const arrivals = new Map<string, number[]>();
  const server = createServer((request, response) => {
    const host = new URL(request.url ?? "/", "http://provider").searchParams.get("host");
    if (host !== null) {
      const list = arrivals.get(host) ?? [];
      list.push(performance.now());
      arrivals.set(host, list);
    }
    response.end("ok");
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("no TCP address");
  const limitRedis = new Redis(limitUrl);
  const prefix = `bench-outbound-${Date.now()}-${round}-${impl}:`;
  const children: ChildProcess[] = [];
  try {
    const workers = Array.from({ length: 3 }, () => {
      const child = spawn(process.execPath, ["--import", "tsx", WORKER], {
        env: {
          ...process.env,
          IMPL: impl,
          LIMIT_REDIS_URL: limitUrl,
          JOBS_REDIS_URL: jobsUrl,
          PREFIX: prefix,
          PROVIDER_URL: `http://127.0.0.1:${address.port}`,
          HOSTS: HOSTS.join(","),
          FETCHES: String(FETCHES),
          LANES: "2",
        },
        stdio: ["pipe", "pipe", "inherit"],
      });
      children.push(child);
      return {
        child,
        lines: createInterface({ input: child.stdout ?? process.stdin })[Symbol.asyncIterator](),
      };
    });
    for (const { lines } of workers) {
      const first = await lines.next();
      if (first.value !== "ready") throw new Error(`${impl}: a worker did not start`);
    }
    // MONITOR tells commands clients sent (round trips) from those scripts ran ("lua").
    const monitor = await limitRedis.monitor();
    let sent = 0;
    let inScripts = 0;
    monitor.on("monitor", (_time: string, _args: string[], source: string) => {
      if (source === "lua") inScripts += 1;
      else sent += 1;
    });
    const startMs = performance.now();
    for (const { child } of workers) child.stdin?.end("go\n");
    let completed = 0;
    for (const { lines } of workers) {
      const last = await lines.next();
      if (last.done === true) throw new Error(`${impl}: a worker exited without its report`);
      completed += (JSON.parse(String(last.value)) as { completed: number }).completed;
    }
    const totalMs = performance.now() - startMs;
    monitor.disconnect();
    let worst = 0;
    const shares: number[] = [];
    for (const host of HOSTS) {
      const sorted = [...(arrivals.get(host) ?? [])].sort((a, b) => a - b);
      worst = Math.max(worst, worstWindow(sorted, 1_000));
      const spanSec = ((sorted.at(-1) ?? 0) - (sorted[0] ?? 0)) / 1000;
      shares.push(spanSec > 0 ? (sorted.length - 1) / spanSec / RATE_PER_SEC : 0);
    }
    return {
      worstWindow: worst,
      share: Math.min(...shares),
      redisPerCall: sent / completed,
      inScriptsPerCall: inScripts / completed,
      totalVsIdeal: totalMs / ((FETCHES / RATE_PER_SEC) * 1000),
    };
  } finally {
    for (const child of children) if (child.exitCode === null) child.kill("SIGKILL");
    limitRedis.disconnect();
    server.closeAllConnections();
    server.close();
  }
}

async function pairsPerSec(run: () => Promise<void>, durationMs = 3_000): Promise<number> {
  let pairs = 0;
  const endMs = performance.now() + durationMs;
  await Promise.all(
    Array.from({ length: 32 }, async () => {
      while (performance.now() < endMs) {
        await run();
        pairs += 1;
      }
    }),
  );
  return pairs / (durationMs / 1000);
}

export async function run(): Promise<void> {
  const redis = await benchRedis();
  const jobs = await OwnRedisServer.start();
  console.log(`Redis: ${describeRedis(redis)}; job counters on a second redis-server`);
  console.log(loadLine("at start"));
  try {
    const figures = new Map<Impl, CrawlFigures[]>(IMPLS.map((impl) => [impl, []]));
    for (const [round, order] of [IMPLS, [...IMPLS].reverse()].entries()) {
      for (const impl of order) {
        const result = await crawl(impl, redis.url, jobs.url, round);
        figures.get(impl)?.push(result);
        console.log(
          `round ${round + 1} ${impl.padEnd(10)} worst 1 s window ${result.worstWindow}  share of quota ${result.share.toFixed(3)}  Redis calls/call ${result.redisPerCall.toFixed(2)} (+${result.inScriptsPerCall.toFixed(2)} in scripts)  total/ideal ${result.totalVsIdeal.toFixed(3)}`,
        );
      }
    }
    console.log(loadLine("after the crawls"));

    const client = new Redis(redis.url);
    const limiter = createOutboundLimiter({
      client,
      keyPrefix: `bench-outbound-pairs-${Date.now()}:`,
      budgets: [{ name: "pairs", limit: null, concurrency: { max: 32 }, maxWaitMs: 10_000 }],
    });
    const url = new URL(redis.url);
    const connection = new Bottleneck.IORedisConnection({
      clientOptions: { host: url.hostname, port: Number(url.port) },
    });
    const bottleneck = new Bottleneck({
      id: `bench-outbound-pairs-${Date.now()}`,
      datastore: "ioredis",
      connection,
      maxConcurrent: 32,
      clearDatastore: true,
    });
    const ratios: number[] = [];
    for (let round = 0; round < 3; round++) {
      const runOurs = () =>
        pairsPerSec(async () => {
          const permit = await limiter.acquire("outbound:pairs");
          await permit.release();
        });
      const runTheirs = () => pairsPerSec(() => bottleneck.schedule(async () => undefined));
      let oursValue: number;
      let theirsValue: number;
      if (round % 2 === 0) {
        oursValue = await runOurs();
        theirsValue = await runTheirs();
      } else {
        theirsValue = await runTheirs();
        oursValue = await runOurs();
      }
      ratios.push(oursValue / theirsValue);
      console.log(
        `pairs round ${round + 1}: limitplane ${oursValue.toFixed(0)}/s, bottleneck maxConcurrent ${theirsValue.toFixed(0)}/s, ratio ${(oursValue / theirsValue).toFixed(2)}x`,
      );
    }
    limiter.close();
    await connection.disconnect();
    client.disconnect();
    console.log(loadLine("at end"));

    const ours = figures.get("limitplane") ?? [];
    const bottleneckFigures = figures.get("bottleneck") ?? [];
    const targets = new Targets();
    const worstOurs = Math.max(...ours.map((figure) => figure.worstWindow));
    targets.holds(
      "limitplane worst provider 1 s window (per host)",
      `${worstOurs} (bottleneck ${Math.max(...bottleneckFigures.map((f) => f.worstWindow))}, rlf-queue ${Math.max(...(figures.get("rlf-queue") ?? []).map((f) => f.worstWindow))})`,
      worstOurs <= BUCKET_BOUND_1S,
      `<= ${BUCKET_BOUND_1S}`,
    );
    targets.atLeast(
      "limitplane throughput share of quota",
      ours.map((figure) => figure.share),
      0.98,
    );
    const oursPerCall = median(ours.map((figure) => figure.redisPerCall));
    const theirsPerCall = median(bottleneckFigures.map((figure) => figure.redisPerCall));
    targets.holds(
      "Redis calls (sent by clients) per completed call, limitplane vs bottleneck",
      `${oursPerCall.toFixed(2)} vs ${theirsPerCall.toFixed(2)} (rlf-queue ${median((figures.get("rlf-queue") ?? []).map((f) => f.redisPerCall)).toFixed(2)})`,
      oursPerCall <= theirsPerCall,
      "<= bottleneck's",
    );
    targets.atLeast("acquire+release pairs/s, limitplane / bottleneck maxConcurrent", ratios, 1);
    targets.atMost(
      "crawler total time / ideal, limitplane",
      ours.map((figure) => figure.totalVsIdeal),
      1.05,
    );
    targets.print("outbound");
  } finally {
    await jobs.stop();
    await redis.stop();
  }
}
