/**
 * The rejection flood's fast path (`src/enforcer/cached-rejection.ts`): a request that a cached
 * denial alone rejects is answered by the Node middleware from the kept 429 without a result
 * object. Against the real Redis and a real `node:http` server: the 429 it writes is the one
 * `checkNow` makes for the same request, byte for byte (the body up to its `retryAfterMs`, every
 * header), it is counted exactly as `checkNow` counts it, and the long way is taken again as soon
 * as the denial no longer applies.
 */
import { randomBytes } from "node:crypto";
import { once } from "node:events";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, inject, it, vi } from "vitest";
import { createEnforcer, createNodeMiddleware, type Enforcer } from "../src";
import type { TPolicyDocumentInput } from "../src/policy";

const redisUrl = inject("redisUrl");
const runPrefix = inject("redisKeyPrefix");

/** A tier of 3 refilled over a day: once spent, every request is a cached denial. */
const LIMITS = {
  defaultTier: "free",
  defaultEndpointClass: "default",
  tiers: [
    { name: "free", limit: { algorithm: "token-bucket", capacity: 3, refillPerSec: 1 / 86_400 } },
  ],
  endpointClasses: [{ name: "default" }],
  ceilings: {
    perCustomer: { algorithm: "token-bucket", capacity: 1_000, refillPerSec: 100 },
    perAddress: { algorithm: "token-bucket", capacity: 1_000, refillPerSec: 100 },
  },
} satisfies TPolicyDocumentInput;

let enforcer: Enforcer;
let server: Server;
let baseUrl: string;
let checkNowCalls: ReturnType<typeof vi.spyOn>;

beforeAll(async () => {
  enforcer = await createEnforcer({
    expectedGateways: 1,
    redis: { url: redisUrl, keyPrefix: `${runPrefix}fast-${randomBytes(3).toString("hex")}:` },
    policy: LIMITS,
    leases: false,
    local: {},
    logger: { log() {} },
  });
  // Spied before the middleware binds it: a request the fast path answers never calls it.
  checkNowCalls = vi.spyOn(enforcer, "checkNow");
  const middleware = createNodeMiddleware(enforcer, {
    identify: (req) => {
      const customerId = req.headers["x-customer"];
      return typeof customerId === "string" ? { customerId, tier: "free" } : null;
    },
  });
  server = createServer((req, res) => middleware(req, res, () => res.end("ok")));
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server?.close();
  await enforcer?.stop();
});

const send = (customerId: string) =>
  fetch(`${baseUrl}/v1/things`, { headers: { "x-customer": customerId } });

const request = (customerId: string) => ({
  customerId,
  tier: "free",
  method: "GET",
  path: "/v1/things",
  clientAddress: "127.0.0.1",
});

/** Spends the customer's 3 and gets the store's 429, which fills the denial cache. */
async function spend(customerId: string): Promise<void> {
  const statuses: number[] = [];
  for (let n = 0; n < 4; n++) {
    const response = await send(customerId);
    await response.arrayBuffer();
    statuses.push(response.status);
  }
  expect(statuses).toEqual([200, 200, 200, 429]);
}

const retryAfterMsOf = (body: string) => Number(/"retryAfterMs":(\d+)\}$/.exec(body)?.[1]);

describe("a flood of cached denials through the Node middleware", () => {
  it("writes the 429 checkNow makes, byte for byte, without calling it", async () => {
    const customerId = "fast-bytes";
    await spend(customerId);
    // The first denial-cache answer makes and keeps its 429 the long way.
    await (await send(customerId)).arrayBuffer();
    // Retried only when the two answers straddle a second (their retry-after seconds differ).
    for (let attempt = 0; attempt < 5; attempt++) {
      const callsBefore = checkNowCalls.mock.calls.length;
      const fast = await send(customerId);
      const fastBody = await fast.text();
      expect(checkNowCalls.mock.calls.length).toBe(callsBefore);
      const slow = await enforcer.checkNow(request(customerId));
      const slowBody = slow.http.bodyText ?? "";
      const fastRetry = retryAfterMsOf(fastBody);
      const slowRetry = retryAfterMsOf(slowBody);
      expect(fastRetry).toBeGreaterThanOrEqual(slowRetry);
      if (Math.ceil(fastRetry / 1000) !== Math.ceil(slowRetry / 1000)) continue;
      expect(fast.status).toBe(429);
      expect(slow.http.status).toBe(429);
      expect(fastBody.replace(/\d+\}$/, "")).toBe(slowBody.replace(/\d+\}$/, ""));
      const raw = slow.http.rawHeaders ?? [];
      expect(raw.length).toBeGreaterThan(4);
      for (let index = 0; index < raw.length; index += 2) {
        const name = raw[index] as string;
        const value = raw[index + 1] as string;
        // Content-Length follows the digits of retryAfterMs, which may differ by one.
        if (name === "Content-Length") {
          expect(Number(fast.headers.get(name))).toBe(Buffer.byteLength(fastBody));
          continue;
        }
        expect([name, fast.headers.get(name)]).toEqual([name, value]);
      }
      return;
    }
    throw new Error("five pairs in a row straddled a second");
  });

  it("counts each fast rejection as checkNow counts one: rejected, from the denial cache", async () => {
    const customerId = "fast-count";
    await spend(customerId);
    // The 429 kept for a retry-after second (and reset second) is made the long way once; the
    // seconds tick down while the flood runs, longer on a busy machine, so each new pair of them
    // costs one checkNow call and no more.
    const secondsOf = (response: Response) =>
      `${response.headers.get("retry-after")}|${response.headers.get("ratelimit")}`;
    const warmUp = await send(customerId);
    await warmUp.arrayBuffer();
    const kept = new Set([secondsOf(warmUp)]);
    const before = enforcer.metricsTotals();
    const callsBefore = checkNowCalls.mock.calls.length;
    const flood = 50;
    let newSeconds = 0;
    for (let n = 0; n < flood; n++) {
      const response = await send(customerId);
      await response.arrayBuffer();
      expect(response.status).toBe(429);
      if (!kept.has(secondsOf(response))) newSeconds++;
      kept.add(secondsOf(response));
    }
    const after = enforcer.metricsTotals();
    const rejectedOf = (figures: typeof before) =>
      figures.scopes.find((scope) => scope.scope === "tier:free")?.rejected ?? 0;
    expect(rejectedOf(after) - rejectedOf(before)).toBe(flood);
    expect(after.decisionsBySource["denial-cache"] - before.decisionsBySource["denial-cache"]).toBe(
      flood,
    );
    expect(after.latency.count - before.latency.count).toBe(flood);
    // Every one of them took the fast path (the denial outlives the test by hours), except the
    // first of each new second. A flood of 50 on an idle machine stays within one or two.
    expect(checkNowCalls.mock.calls.length - callsBefore).toBe(newSeconds);
    expect(newSeconds).toBeLessThan(flood / 2);
  });

  it("takes the long way for what it does not cover: another customer, an admission", async () => {
    const callsBefore = checkNowCalls.mock.calls.length;
    const response = await send("fast-fresh");
    expect(response.status).toBe(200);
    await response.arrayBuffer();
    expect(checkNowCalls.mock.calls.length - callsBefore).toBe(1);
  });
});
