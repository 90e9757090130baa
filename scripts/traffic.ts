/**
 * Traffic generator for the demo gateways: customers on each tier of the example policy, steady and
 * bursty, spread round-robin over the gateways, then a summary of what was admitted and rejected
 * per customer and per scope.
 *
 *   npm run traffic -- --gateways http://127.0.0.1:4001,http://127.0.0.1:4002 --duration 30s
 *
 * Options: `--duration` (`500ms`, `30s`, `2m`, or `forever`: until Ctrl-C; default 10s), `--scale` (multiplies every rate and
 * burst; default 1). Identifies customers the way the demo gateway reads them
 * (`Authorization: Bearer <id>`, `x-tier`).
 */
import { Agent, request } from "node:http";
import { parseArgs } from "node:util";

const { values } = parseArgs({
  options: {
    gateways: { type: "string" },
    duration: { type: "string", default: "10s" },
    scale: { type: "string", default: "1" },
  },
});

function parseDurationMs(text: string): number {
  if (text.trim() === "forever") return Number.POSITIVE_INFINITY;
  const match = /^(\d+(?:\.\d+)?)(ms|s|m)$/.exec(text.trim());
  if (match === null)
    throw new Error(`--duration must look like 500ms, 30s, 2m or forever, got ${text}`);
  const value = Number(match[1]);
  return match[2] === "ms" ? value : match[2] === "s" ? value * 1_000 : value * 60_000;
}

if (values.gateways === undefined) {
  console.error(
    "usage: npm run traffic -- --gateways http://127.0.0.1:4001[,...] [--duration 30s]",
  );
  process.exit(2);
}
const gateways = values.gateways.split(",").map((url) => new URL(url.trim()));
const durationMs = parseDurationMs(values.duration);
const scale = Number(values.scale);
if (!(scale > 0)) throw new Error("--scale must be > 0");

interface Endpoint {
  readonly method: "GET" | "POST";
  readonly path: string;
}

const THINGS: Endpoint = { method: "GET", path: "/v1/things" };
const SEARCH: Endpoint = { method: "GET", path: "/v1/search" };
const REPORT: Endpoint = { method: "GET", path: "/v1/reports/monthly" };
const SIGN_IN: Endpoint = { method: "POST", path: "/v1/auth/sign-in" };

/** One simulated client. */
interface Client {
  readonly name: string;
  readonly customerId: string | null;
  readonly tier: string | null;
  readonly pattern: string;
  readonly endpoints: readonly Endpoint[];
  /** Steady: requests per second. */
  readonly ratePerSec?: number;
  /** Bursty: `burstSize` requests at once every `everyMs`. */
  readonly burst?: { readonly burstSize: number; readonly everyMs: number };
}

const CLIENTS: readonly Client[] = [
  {
    name: "initech",
    customerId: "initech",
    tier: "free",
    pattern: "steady 8/s",
    endpoints: [THINGS, THINGS, THINGS, SEARCH],
    ratePerSec: 8,
  },
  {
    name: "initech-reports",
    customerId: "initech",
    tier: "free",
    pattern: "steady 0.5/s reports",
    endpoints: [REPORT],
    ratePerSec: 0.5,
  },
  {
    name: "vandelay",
    customerId: "vandelay",
    tier: "free",
    pattern: "bursts of 30 every 3 s",
    endpoints: [THINGS],
    burst: { burstSize: 30, everyMs: 3_000 },
  },
  {
    name: "globex",
    customerId: "globex",
    tier: "pro",
    pattern: "steady 60/s",
    endpoints: [THINGS, THINGS, SEARCH, REPORT],
    ratePerSec: 60,
  },
  {
    name: "hooli",
    customerId: "hooli",
    tier: "pro",
    pattern: "bursts of 250 every 4 s",
    endpoints: [THINGS],
    burst: { burstSize: 250, everyMs: 4_000 },
  },
  {
    name: "acme",
    customerId: "acme",
    tier: "enterprise",
    pattern: "steady 150/s",
    endpoints: [THINGS, SEARCH, REPORT],
    ratePerSec: 150,
  },
  {
    name: "anonymous sign-in",
    customerId: null,
    tier: null,
    pattern: "steady 2/s",
    endpoints: [SIGN_IN],
    ratePerSec: 2,
  },
];

interface Tally {
  sent: number;
  admitted: number;
  rejected: number;
  errors: number;
  skipped: number;
  readonly rejectedByScope: Map<string, number>;
}

/** Most requests in flight per client; beyond it a tick is skipped (and counted), not queued. */
const MAX_IN_FLIGHT_PER_CLIENT = 256;

const agent = new Agent({ keepAlive: true, maxSockets: 128 });
let next = 0;

function send(client: Client, endpoint: Endpoint): Promise<{ status: number; body: string }> {
  const gateway = gateways[next++ % gateways.length] ?? gateways[0];
  if (gateway === undefined) throw new Error("no gateway");
  const headers: Record<string, string> = {};
  if (client.customerId !== null) headers.authorization = `Bearer ${client.customerId}`;
  if (client.tier !== null) headers["x-tier"] = client.tier;
  return new Promise((resolve, reject) => {
    const req = request(
      {
        agent,
        host: gateway.hostname,
        port: gateway.port,
        method: endpoint.method,
        path: endpoint.path,
        headers,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (chunk: Buffer) => chunks.push(chunk));
        res.on("end", () =>
          resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() }),
        );
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end();
  });
}

async function runClient(client: Client, tally: Tally, stop: StopAt): Promise<void> {
  let inFlight = 0;
  let endpointIndex = 0;
  const pending = new Set<Promise<void>>();
  const fire = () => {
    if (inFlight >= MAX_IN_FLIGHT_PER_CLIENT) {
      tally.skipped++;
      return;
    }
    const endpoint = client.endpoints[endpointIndex++ % client.endpoints.length] ?? THINGS;
    inFlight++;
    tally.sent++;
    const done = send(client, endpoint)
      .then(({ status, body }) => {
        if (status === 429) {
          tally.rejected++;
          let scope = "(unknown)";
          try {
            const parsed: unknown = JSON.parse(body);
            if (typeof parsed === "object" && parsed !== null && "scope" in parsed) {
              scope = String(parsed.scope);
            }
          } catch {
            // Counted under (unknown).
          }
          tally.rejectedByScope.set(scope, (tally.rejectedByScope.get(scope) ?? 0) + 1);
        } else if (status >= 200 && status < 300) {
          tally.admitted++;
        } else {
          tally.errors++;
        }
      })
      .catch(() => {
        tally.errors++;
      })
      .finally(() => {
        inFlight--;
        pending.delete(done);
      });
    pending.add(done);
  };

  const startMs = performance.now();
  if (client.burst !== undefined) {
    const burstSize = Math.max(1, Math.round(client.burst.burstSize * scale));
    for (let at = 0; startMs + at < stop.atMs; at += client.burst.everyMs) {
      await sleepUntil(startMs + at, stop);
      for (let i = 0; i < burstSize; i++) fire();
    }
  } else {
    const intervalMs = 1_000 / ((client.ratePerSec ?? 1) * scale);
    for (let count = 0; ; count++) {
      const dueMs = startMs + count * intervalMs;
      if (dueMs >= stop.atMs) break;
      await sleepUntil(dueMs, stop);
      fire();
    }
  }
  await Promise.all(pending);
}

/** When to stop: the deadline, or now once a signal arrives (`--duration forever`). */
interface StopAt {
  atMs: number;
  wake: (() => void) | null;
}

function sleepUntil(atMs: number, stop: StopAt): Promise<void> {
  const waitMs = atMs - performance.now();
  if (waitMs <= 0) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, waitMs);
    stop.wake = () => {
      clearTimeout(timer);
      resolve();
    };
  });
}

function pad(text: string | number, width: number, alignRight = false): string {
  const value = String(text);
  return alignRight ? value.padStart(width) : value.padEnd(width);
}

const tallies = new Map<Client, Tally>(
  CLIENTS.map((client) => [
    client,
    { sent: 0, admitted: 0, rejected: 0, errors: 0, skipped: 0, rejectedByScope: new Map() },
  ]),
);
console.log(
  `traffic: ${CLIENTS.length} clients over ${gateways.length} gateway(s) ${Number.isFinite(durationMs) ? `for ${durationMs} ms` : "until stopped"} (scale ${scale})`,
);
const stops: StopAt[] = [];
const stopAll = () => {
  for (const stop of stops) {
    stop.atMs = 0;
    stop.wake?.();
  }
};
process.once("SIGINT", stopAll);
process.once("SIGTERM", stopAll);
await Promise.all(
  CLIENTS.map((client) => {
    const tally = tallies.get(client);
    if (tally === undefined) throw new Error("no tally");
    const stop: StopAt = { atMs: performance.now() + durationMs, wake: null };
    stops.push(stop);
    return runClient(client, tally, stop);
  }),
);
agent.destroy();

console.log("");
console.log(
  `${pad("client", 20)}${pad("tier", 12)}${pad("pattern", 26)}${pad("sent", 8, true)}${pad("admitted", 10, true)}${pad("rejected", 10, true)}${pad("errors", 8, true)}  rejected by scope`,
);
const byScope = new Map<string, number>();
for (const [client, tally] of tallies) {
  const scopes = [...tally.rejectedByScope]
    .sort((a, b) => b[1] - a[1])
    .map(([scope, count]) => `${scope} ${count}`)
    .join(", ");
  for (const [scope, count] of tally.rejectedByScope) {
    byScope.set(scope, (byScope.get(scope) ?? 0) + count);
  }
  console.log(
    `${pad(client.name, 20)}${pad(client.tier ?? "-", 12)}${pad(client.pattern, 26)}${pad(tally.sent, 8, true)}${pad(tally.admitted, 10, true)}${pad(tally.rejected, 10, true)}${pad(tally.errors + tally.skipped, 8, true)}  ${scopes}`,
  );
}
console.log("");
console.log("rejections per scope:");
for (const [scope, count] of [...byScope].sort((a, b) => b[1] - a[1])) {
  console.log(`  ${pad(scope, 40)}${pad(count, 8, true)}`);
}
