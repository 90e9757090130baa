import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { createServer, type Server, type ServerResponse } from "node:http";
import path from "node:path";
import { createInterface } from "node:readline";
import type { Redis } from "ioredis";
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from "vitest";
import { CONCURRENCY_EXCEEDED_TYPE } from "../src/enforcer/concurrency-middleware";
import { createOutboundLimiter, type OutboundPermit } from "../src/enforcer/outbound-limiter";
import { waitFor } from "../src/testing/wait-for";
import { GATEWAY_BUDGET } from "./support/outbound";
import { readyRedis } from "./support/redis";

/*
 * Concurrency caps across real gateway processes and the real Redis: two gateways cap a customer
 * at 5 requests in flight, measured at the upstream; a gateway killed with SIGKILL while holding
 * 5 slots frees them within the budget's slotTtlMs (the stated bound: a slot lapses at most one
 * TTL after its holder's last renewal), polled, failing after three times that.
 */

const GATEWAY_PATH = path.join(import.meta.dirname, "outbound-gateway.ts");
const SLOT_TTL_MS = 1_500;
const CAP = 5;

interface Upstream {
  readonly url: string;
  inFlight: number;
  mostInFlight: number;
  served: number;
  /** Responses held open until the test lets them go. */
  readonly held: ServerResponse[];
}

const children: ChildProcess[] = [];
const servers: Server[] = [];
let redis: Redis;
let run = 0;

beforeAll(async () => {
  redis = await readyRedis("control");
});
afterAll(async () => {
  await redis.quit();
});
afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill("SIGKILL");
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    server.close();
  }
});

/** The upstream: `/slow` answers after 200 ms, `/hold` when released, anything else at once. */
async function startUpstream(): Promise<Upstream> {
  const server = createServer();
  servers.push(server);
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("no TCP address");
  const upstream: Upstream = {
    url: `http://127.0.0.1:${address.port}`,
    inFlight: 0,
    mostInFlight: 0,
    served: 0,
    held: [],
  };
  server.on("request", (request, response) => {
    upstream.inFlight += 1;
    upstream.served += 1;
    upstream.mostInFlight = Math.max(upstream.mostInFlight, upstream.inFlight);
    response.once("close", () => {
      upstream.inFlight -= 1;
    });
    if (request.url === "/hold") upstream.held.push(response);
    else if (request.url === "/slow") setTimeout(() => response.end("slow"), 200);
    else response.end("fast");
  });
  return upstream;
}

async function startGateway(
  upstream: Upstream,
  keyPrefix: string,
): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, ["--import", "tsx", GATEWAY_PATH], {
    env: { ...process.env, KEY_PREFIX: keyPrefix, UPSTREAM_URL: upstream.url },
    stdio: ["ignore", "pipe", "inherit"],
  });
  children.push(child);
  const lines = createInterface({ input: child.stdout ?? process.stdin });
  for await (const line of lines) {
    const match = /^listening (\d+)$/.exec(line);
    if (match !== null) return { child, url: `http://127.0.0.1:${match[1]}` };
  }
  throw new Error("the gateway exited before listening");
}

function freshPrefix(): string {
  run += 1;
  return `${inject("redisKeyPrefix")}gw${run}:`;
}

describe("concurrency caps across gateways", () => {
  it("2 gateways, 50 concurrent slow requests of one customer: never more than 5 at the upstream", async () => {
    const upstream = await startUpstream();
    const keyPrefix = freshPrefix();
    const gateways = await Promise.all([
      startGateway(upstream, keyPrefix),
      startGateway(upstream, keyPrefix),
    ]);
    const responses = await Promise.all(
      Array.from({ length: 50 }, async (_, index) => {
        const gateway = gateways[index % 2];
        if (gateway === undefined) throw new Error("no gateway");
        const response = await fetch(`${gateway.url}/slow`, { headers: { "x-customer": "acme" } });
        return { status: response.status, headers: response.headers, text: await response.text() };
      }),
    );
    const admitted = responses.filter((response) => response.status === 200);
    const refused = responses.filter((response) => response.status === 429);
    expect(admitted.length + refused.length).toBe(50);
    expect(upstream.mostInFlight).toBeLessThanOrEqual(CAP);
    expect(upstream.served).toBe(admitted.length);
    expect(admitted.length).toBeGreaterThanOrEqual(CAP);
    for (const response of refused) {
      expect(response.headers.get("retry-after")).toBe("1");
      expect(response.headers.get("content-type")).toBe("application/problem+json");
      expect(response.headers.get("ratelimit-policy")).toBe(
        '"outbound:api";q=5;qu="concurrent-requests"',
      );
      expect(JSON.parse(response.text)).toEqual({
        type: CONCURRENCY_EXCEEDED_TYPE,
        title: "Too many concurrent requests",
        status: 429,
        code: "CONCURRENCY_LIMITED",
        scope: "outbound:api",
        limit: 5,
        retryAfterMs: 1000,
      });
    }
    // Every slot was given back when its response ended.
    const limiter = createOutboundLimiter({ client: redis, keyPrefix, budgets: [GATEWAY_BUDGET] });
    const permits: OutboundPermit[] = [];
    for (let i = 0; i < CAP; i++)
      permits.push(await limiter.acquire("outbound:api", { key: "acme" }));
    expect(await Promise.all(permits.map((permit) => permit.release()))).toEqual(
      Array(CAP).fill(true),
    );
    limiter.close();
  }, 120_000);

  it("a gateway killed with SIGKILL holding 5 slots frees them within slotTtlMs", async () => {
    const upstream = await startUpstream();
    const keyPrefix = freshPrefix();
    const doomed = await startGateway(upstream, keyPrefix);
    const pending = Array.from({ length: CAP }, () =>
      fetch(`${doomed.url}/hold`, { headers: { "x-customer": "acme" } }).catch(() => undefined),
    );
    await waitFor("5 requests held at the upstream", () =>
      upstream.held.length === CAP ? true : undefined,
    );
    const limiter = createOutboundLimiter({ client: redis, keyPrefix, budgets: [GATEWAY_BUDGET] });
    // While the gateway lives (and renews), its 5 slots are taken.
    await expect(limiter.acquire("outbound:api", { key: "acme" })).rejects.toThrow(
      /all 5 concurrency slots stayed taken/,
    );
    const exited = once(doomed.child, "exit");
    doomed.child.kill("SIGKILL");
    await exited;
    const permits = await waitFor(
      "the dead gateway's 5 slots",
      async () => {
        const taken: OutboundPermit[] = [];
        try {
          for (let i = 0; i < CAP; i++)
            taken.push(await limiter.acquire("outbound:api", { key: "acme" }));
          return taken;
        } catch {
          await Promise.all(taken.map((permit) => permit.release()));
          return undefined;
        }
      },
      { timeoutMs: 3 * SLOT_TTL_MS, intervalMs: 50 },
    );
    expect(permits).toHaveLength(CAP);
    expect(Number(await redis.hget(`${keyPrefix}ob:{o:api:acme}:x`, "expired"))).toBe(CAP);
    await Promise.all(permits.map((permit) => permit.release()));
    for (const response of upstream.held) response.end("released");
    await Promise.all(pending);
    limiter.close();
  }, 120_000);
});
