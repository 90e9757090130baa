import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { createServer, type Server } from "node:http";
import path from "node:path";
import { createInterface } from "node:readline";
import { afterEach, describe, expect, inject, it } from "vitest";
import { bucketBound, busiestWindow } from "./support/outbound";

/*
 * The polite crawler, with real processes and the real Redis: three worker processes share one
 * outbound budget of 10 requests a second per host, burst 1, over 5 hosts, and fetch from a local
 * HTTP provider that records when each request arrives per host. Asserted: by the turns Redis
 * gave (its own clock), no window of a host ever holds more than capacity + rate × window; at the
 * provider, over 5 s windows, at most that plus one (a process that wakes late can bring one
 * call closer to the next) while calls reach the provider within 100 ms of their turn's lag; on a
 * busy machine, whose scheduler can hold a call back longer, at most capacity + rate × (5 s + the
 * spread of those lags, measured per call); every worker gets between 25 % and 45 % of the calls. A second run has
 * the provider fail 30 % of calls and the workers retry them: the retries stay within the quota.
 * How long the crawl takes against the ideal is the bench's figure (`npm run bench -- outbound`).
 */

const WORKER_PATH = path.join(import.meta.dirname, "outbound-crawler-worker.ts");
const HOSTS = ["a.example", "b.example", "c.example", "d.example", "e.example"];
const CAPACITY = 1;
const REFILL_PER_SEC = 10;
const WORKERS = 3;

interface WorkerReport {
  readonly worker: string;
  readonly succeeded: number;
  readonly turns: Record<string, number[]>;
}

interface Provider {
  readonly url: string;
  readonly arrivalsByHost: Map<string, number[]>;
  /** Per host, each call's arrival (this process's clock) less its turn (Redis's clock), in ms. */
  readonly lagsByHost: Map<string, number[]>;
  readonly server: Server;
}

const children: ChildProcess[] = [];
const servers: Server[] = [];

afterEach(async () => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill("SIGKILL");
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    server.close();
  }
});

/**
 * The provider: records every arrival per host (a request naming no host is a worker warming its
 * connections); failing, it answers 503 to 3 calls in 10 per host.
 */
async function startProvider(isFailing: boolean): Promise<Provider> {
  const arrivalsByHost = new Map<string, number[]>();
  const lagsByHost = new Map<string, number[]>();
  const server = createServer((request, response) => {
    const at = performance.now();
    const wallAt = performance.timeOrigin + at;
    const query = new URL(request.url ?? "/", "http://provider").searchParams;
    const host = query.get("host");
    if (host === null) {
      response.end("warm");
      return;
    }
    const arrivals = arrivalsByHost.get(host) ?? [];
    arrivalsByHost.set(host, arrivals);
    arrivals.push(at);
    const lags = lagsByHost.get(host) ?? [];
    lagsByHost.set(host, lags);
    lags.push(wallAt - Number(query.get("turn")));
    const isFailure = isFailing && [2, 5, 8].includes(arrivals.length % 10);
    response.writeHead(isFailure ? 503 : 200, { "content-type": "text/plain" });
    response.end(isFailure ? "busy" : "ok");
  });
  servers.push(server);
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("no TCP address");
  return { url: `http://127.0.0.1:${address.port}`, arrivalsByHost, lagsByHost, server };
}

async function crawl(
  provider: Provider,
  keyPrefix: string,
  fetches: number,
  retries: number,
): Promise<WorkerReport[]> {
  const started = Array.from({ length: WORKERS }, (_, index) => {
    const child = spawn(process.execPath, ["--import", "tsx", WORKER_PATH], {
      env: {
        ...process.env,
        KEY_PREFIX: keyPrefix,
        PROVIDER_URL: provider.url,
        HOSTS: HOSTS.join(","),
        FETCHES: String(fetches),
        WORKER: `w${index}`,
        RETRIES: String(retries),
        LANES: "2",
      },
      stdio: ["pipe", "pipe", "inherit"],
    });
    children.push(child);
    const lines = createInterface({ input: child.stdout ?? process.stdin });
    const iterator = lines[Symbol.asyncIterator]();
    return { child, iterator };
  });
  // Every worker connected before any starts, so none gets a head start.
  for (const { iterator } of started) {
    const first = await iterator.next();
    expect(first.value).toBe("ready");
  }
  for (const { child } of started) child.stdin?.end("go\n");
  const reports: WorkerReport[] = [];
  for (const { child, iterator } of started) {
    const last = await iterator.next();
    if (last.done === true) throw new Error("a worker exited without its report");
    reports.push(JSON.parse(String(last.value)) as WorkerReport);
    if (child.exitCode === null) await once(child, "exit");
    expect(child.exitCode).toBe(0);
  }
  return reports;
}

function assertWithinQuota(provider: Provider, reports: readonly WorkerReport[]): void {
  for (const host of HOSTS) {
    const turns = reports.flatMap((report) => report.turns[host] ?? []).sort((a, b) => a - b);
    const arrivals = [...(provider.arrivalsByHost.get(host) ?? [])].sort((a, b) => a - b);
    expect(arrivals.length).toBe(turns.length);
    for (const windowMs of [100, 1_000, 5_000]) {
      expect(
        busiestWindow(turns, windowMs),
        `${host}: turns in ${windowMs} ms`,
      ).toBeLessThanOrEqual(bucketBound(CAPACITY, REFILL_PER_SEC, windowMs));
    }
    // Two calls whose lags differ by d can arrive d closer together than their turns were, so a
    // 5 s window at the provider holds at most the turns of a (5 s + spread) window. The spread
    // is at least 100 ms: the "plus one" the quota allows a late process.
    const lags = provider.lagsByHost.get(host) ?? [];
    expect(lags.every(Number.isFinite), `${host}: every call names its turn`).toBe(true);
    const spreadMs = Math.max(100, Math.max(...lags) - Math.min(...lags));
    expect(
      busiestWindow(arrivals, 5_000),
      `${host}: arrivals in 5 s (turn-to-arrival lags spread over ${spreadMs.toFixed(0)} ms)`,
    ).toBeLessThanOrEqual(Math.floor(bucketBound(CAPACITY, REFILL_PER_SEC, 5_000 + spreadMs)));
  }
}

describe("a polite crawler: 3 processes, 10 per second per host, burst 1", () => {
  it("never exceeds the budget per host, and no worker starves", async () => {
    const provider = await startProvider(false);
    const fetches = 200;
    const reports = await crawl(provider, `${inject("redisKeyPrefix")}crawl1:`, fetches, 0);
    expect(reports.reduce((sum, report) => sum + report.succeeded, 0)).toBe(fetches * HOSTS.length);
    assertWithinQuota(provider, reports);
    const total = fetches * HOSTS.length;
    for (const report of reports) {
      const share = report.succeeded / total;
      expect(share, `${report.worker}'s share`).toBeGreaterThanOrEqual(0.25);
      expect(share, `${report.worker}'s share`).toBeLessThanOrEqual(0.45);
    }
  }, 180_000);

  it("retries of a provider failing 30 % of calls are charged and stay within the quota", async () => {
    const provider = await startProvider(true);
    const fetches = 40;
    const reports = await crawl(provider, `${inject("redisKeyPrefix")}crawl2:`, fetches, 10);
    expect(reports.reduce((sum, report) => sum + report.succeeded, 0)).toBe(fetches * HOSTS.length);
    // Every call the provider saw, failures included, had a turn of its own.
    for (const host of HOSTS) {
      const arrivals = provider.arrivalsByHost.get(host) ?? [];
      expect(arrivals.length).toBeGreaterThan(fetches);
    }
    assertWithinQuota(provider, reports);
  }, 180_000);
});
