import { once } from "node:events";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { MemoryStore } from "../limiter/stores/memory";
import { ManualTimers } from "../limiter/timers";
import type { LimiterStore } from "../limiter/types";
import { forwardedClientAddress } from "../policy/address";
import { prepareSnapshot } from "../policy/prepare";
import { checkFetchResponseContract } from "../testing/http-contract";
import { exampleSnapshot } from "../testing/policy-factory";
import { DecisionEngine, type EnforcerRequest, type RequestChecker } from "./decision-engine";
import { createFetchMiddleware, withRateLimit } from "./fetch-middleware";
import { trustedHops } from "./http-adapter";
import { createNodeMiddleware } from "./node-middleware";

/** A store that is down: every call fails at once. */
const DOWN_STORE: LimiterStore = {
  decide: () => Promise.reject(new Error("connect ECONNREFUSED")),
  peek: () => Promise.reject(new Error("connect ECONNREFUSED")),
};

/**
 * An engine on the example policy and an in-process store, recording what it was asked; with
 * `isNow`, the local stage on and `checkNow` offered (a cached denial is then answered at once).
 */
function checker(
  store?: LimiterStore,
  isNow = false,
): RequestChecker & { readonly requests: EnforcerRequest[] } {
  const timers = new ManualTimers(1_000);
  const snapshot = prepareSnapshot(exampleSnapshot());
  const engine = new DecisionEngine({
    store: store ?? new MemoryStore({ clock: timers }),
    snapshot: () => snapshot,
    expectedGateways: 1,
    clock: timers,
    timers,
    localStage: isNow ? {} : false,
  });
  const requests: EnforcerRequest[] = [];
  const checked = {
    requests,
    check(request: EnforcerRequest) {
      requests.push(request);
      return engine.check(request);
    },
  };
  if (!isNow) return checked;
  return {
    ...checked,
    checkNow(request: EnforcerRequest) {
      requests.push(request);
      return engine.checkNow(request);
    },
  };
}

const FREE = { customerId: "initech", tier: "free" };

describe("forwardedClientAddress", () => {
  it.each<[string, string | undefined, number, string | null]>([
    ["no trusted proxy: the header is ignored", "203.0.113.1", 0, null],
    ["one proxy: the entry it appended (rightmost)", "6.6.6.6, 203.0.113.1", 1, "203.0.113.1"],
    ["two proxies: the second from the right", "6.6.6.6, 203.0.113.1, 10.0.0.2", 2, "203.0.113.1"],
    ["fewer entries than trusted proxies: none", "203.0.113.1", 2, null],
    ["no header", undefined, 1, null],
  ])("%s", (_name, header, hops, expected) => {
    expect(forwardedClientAddress(header, hops)).toBe(expected);
  });

  it("trustProxy true is one hop; false none; nonsense is refused", () => {
    expect(trustedHops(true)).toBe(1);
    expect(trustedHops(false)).toBe(0);
    expect(trustedHops(undefined)).toBe(0);
    expect(() => trustedHops(-1)).toThrow(RangeError);
  });
});

describe("Fetch middleware", () => {
  it("200: an admitted request reaches the handler, and its response carries the headers", async () => {
    const limit = createFetchMiddleware(checker(), { identify: () => FREE });
    const response = await limit(new Request("http://gw.test/v1/things"), () =>
      Response.json({ ok: true }),
    );
    expect(response.status).toBe(200);
    expect(Object.fromEntries(response.headers)).toMatchObject({
      "ratelimit-policy": '"tier:free";q=20;w=2, "ceiling";q=10000;w=5',
      ratelimit: '"tier:free";r=19;t=1',
      "x-ratelimit-limit": "20",
      "x-ratelimit-remaining": "19",
      "x-ratelimit-reset": "1",
    });
    expect((await checkFetchResponseContract(response.clone())).rateLimit).toEqual({
      name: "tier:free",
      remaining: 19,
      resetSec: 1,
    });
    expect(await response.json()).toEqual({ ok: true });
  });

  it("429: a rejection never reaches the handler; a quota-exceeded problem naming the policy", async () => {
    const limit = createFetchMiddleware(checker(), { identify: () => FREE });
    let handled = 0;
    const handler = () => {
      handled++;
      return new Response("ok");
    };
    for (let i = 0; i < 20; i++) await limit(new Request("http://gw.test/v1/things"), handler);
    const response = await limit(new Request("http://gw.test/v1/things"), handler);
    expect(handled).toBe(20);
    expect(response.status).toBe(429);
    expect(response.headers.get("retry-after")).toBe("1");
    expect(response.headers.get("content-type")).toBe("application/problem+json");
    expect(response.headers.get("ratelimit")).toBe('"tier:free";r=0;t=1');
    const contract = await checkFetchResponseContract(response);
    expect(contract.problem).toEqual({
      type: "https://iana.org/assignments/http-problem-types#quota-exceeded",
      title: "Quota exceeded",
      status: 429,
      "violated-policies": ["tier:free"],
      code: "RATE_LIMITED",
      scope: "tier:free",
      retryAfterMs: 100,
    });
    expect([...contract.policies.keys()]).toEqual(["tier:free", "ceiling"]);
  });

  it("503: a fail-closed limit with the store down is a temporary-reduced-capacity problem", async () => {
    const limit = createFetchMiddleware(checker(DOWN_STORE), {
      clientAddress: () => "203.0.113.9",
    });
    let handled = 0;
    const response = await limit(
      new Request("http://gw.test/v1/auth/sign-in", { method: "POST" }),
      () => {
        handled++;
        return new Response("ok");
      },
    );
    expect(handled).toBe(0);
    expect(response.status).toBe(503);
    const contract = await checkFetchResponseContract(response);
    expect(contract.problem).toEqual({
      type: "https://iana.org/assignments/http-problem-types#temporary-reduced-capacity",
      title: "Rate limiter unavailable",
      status: 503,
      code: "LIMITER_UNAVAILABLE",
      scope: "address/endpoint:sign-in",
      retryAfterMs: 1000,
    });
    expect(contract.retryAfterSec).toBe(1);
    expect(contract.policies.has("address/endpoint:sign-in")).toBe(true);
  });

  it("adds the headers to a response whose headers are immutable (a redirect)", async () => {
    const limit = createFetchMiddleware(checker(), { identify: () => FREE });
    const response = await limit(new Request("http://gw.test/v1/things"), () =>
      Response.redirect("http://gw.test/elsewhere", 302),
    );
    expect(response.status).toBe(302);
    expect(response.headers.get("location")).toBe("http://gw.test/elsewhere");
    expect(response.headers.get("x-ratelimit-remaining")).toBe("19");
  });

  it("reads X-Forwarded-For only with trustProxy, and passes identity, cost and method", async () => {
    const untrusting = checker();
    const trusting = checker();
    const request = () =>
      new Request("http://gw.test/v1/reports/9?x=1", {
        method: "GET",
        headers: { "x-forwarded-for": "6.6.6.6, 203.0.113.1" },
      });
    await createFetchMiddleware(untrusting)(request(), () => new Response("ok"));
    await createFetchMiddleware(trusting, {
      trustProxy: true,
      identify: () => FREE,
      cost: () => 3,
    })(request(), () => new Response("ok"));
    expect(untrusting.requests[0]).toEqual({
      customerId: null,
      tier: null,
      method: "GET",
      path: "/v1/reports/9",
      clientAddress: null,
    });
    expect(trusting.requests[0]).toMatchObject({
      customerId: "initech",
      clientAddress: "203.0.113.1",
      cost: 3,
    });
  });

  it("withRateLimit keeps a Next.js handler's signature and hands the context through", async () => {
    const handler = withRateLimit(
      checker(),
      (_request: Request, context: { params: Promise<{ id: string }> }) =>
        context.params.then((params) => Response.json(params)),
      { identify: () => FREE },
    );
    const response = await handler(new Request("http://gw.test/v1/things/5"), {
      params: Promise.resolve({ id: "5" }),
    });
    expect(await response.json()).toEqual({ id: "5" });
    expect(response.headers.get("x-ratelimit-limit")).toBe("20");
  });
});

describe("Node middleware (node:http, as Express calls it)", () => {
  let server: Server | undefined;

  afterEach(async () => {
    if (server === undefined) return;
    server.close();
    await once(server, "close");
    server = undefined;
  });

  async function serve(limiter: RequestChecker, trustProxy = false): Promise<string> {
    const limit = createNodeMiddleware(limiter, {
      trustProxy,
      identify: (req) => {
        const customerId = req.headers["x-customer-id"];
        return typeof customerId === "string" ? { customerId, tier: "free" } : null;
      },
    });
    server = createServer((req, res) =>
      limit(req, res, (error?: unknown) => {
        if (error !== undefined) {
          res.writeHead(500).end(error instanceof Error ? error.message : "error");
          return;
        }
        res.writeHead(200, { "Content-Type": "text/plain" }).end("hello");
      }),
    );
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    const { port } = server.address() as AddressInfo;
    return `http://127.0.0.1:${port}`;
  }

  it("200: next() runs and the response carries the headers", async () => {
    const base = await serve(checker());
    const response = await fetch(`${base}/v1/search`, { headers: { "x-customer-id": "initech" } });
    expect(response.status).toBe(200);
    expect((await checkFetchResponseContract(response.clone())).rateLimit?.name).toBe("tier:free");
    expect(await response.text()).toBe("hello");
    expect(response.headers.get("ratelimit-policy")).toBe(
      '"tier:free";q=20;w=2, "tier:free/endpoint:search";q=20;w=10, "ceiling";q=10000;w=5',
    );
    expect(response.headers.get("x-ratelimit-remaining")).toBe("18");
  });

  it("429: problem body, Retry-After, every header, and next() not called", async () => {
    const base = await serve(checker());
    const get = () => fetch(`${base}/v1/reports/1`, { headers: { "x-customer-id": "initech" } });
    expect((await get()).status).toBe(200);
    expect((await get()).status).toBe(200);
    const rejected = await get();
    expect(rejected.status).toBe(429);
    expect(rejected.headers.get("retry-after")).toBe("20");
    expect(rejected.headers.get("ratelimit")).toBe('"tier:free/endpoint:reports";r=0;t=20');
    expect(rejected.headers.get("x-ratelimit-limit")).toBe("20");
    expect(rejected.headers.get("x-ratelimit-reset")).toBe("40");
    expect(rejected.headers.get("content-length")).not.toBeNull();
    expect((await checkFetchResponseContract(rejected)).problem).toEqual({
      type: "https://iana.org/assignments/http-problem-types#quota-exceeded",
      title: "Quota exceeded",
      status: 429,
      "violated-policies": ["tier:free", "tier:free/endpoint:reports"],
      code: "RATE_LIMITED",
      scope: "tier:free/endpoint:reports",
      retryAfterMs: 20_000,
    });
  });

  it("503: fail-closed with the store down, the same problem as the Fetch adapter's", async () => {
    let nextCalls = 0;
    const limit = createNodeMiddleware(checker(DOWN_STORE));
    server = createServer((req, res) =>
      limit(req, res, () => {
        nextCalls++;
        res.writeHead(200).end("hello");
      }),
    );
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    const { port } = server.address() as AddressInfo;
    const response = await fetch(`http://127.0.0.1:${port}/v1/auth/sign-in`, { method: "POST" });
    expect(nextCalls).toBe(0);
    expect(response.status).toBe(503);
    const contract = await checkFetchResponseContract(response);
    expect(contract.problem).toMatchObject({
      status: 503,
      code: "LIMITER_UNAVAILABLE",
      scope: "address/endpoint:sign-in",
    });
    expect(contract.retryAfterSec).toBe(1);
  });

  it("keys anonymous callers by the socket address unless a proxy is trusted", async () => {
    const direct = checker();
    const base = await serve(direct);
    await fetch(`${base}/`, { headers: { "x-forwarded-for": "6.6.6.6" } });
    expect(direct.requests[0]?.clientAddress).toBe("127.0.0.1");
    server?.close();
    const proxied = checker();
    const behindProxy = await serve(proxied, true);
    await fetch(`${behindProxy}/`, { headers: { "x-forwarded-for": "6.6.6.6, 203.0.113.1" } });
    expect(proxied.requests[0]?.clientAddress).toBe("203.0.113.1");
  });

  it("500: a mistake in identify (an invalid customer id) goes to next(error)", async () => {
    const base = await serve(checker());
    const response = await fetch(`${base}/`, { headers: { "x-customer-id": "not valid!" } });
    expect(response.status).toBe(500);
    expect(await response.text()).toMatch(/is not a valid customer id/);
  });

  /** Serves `limiter` and notes, per request, what was done before the middleware returned. */
  async function serveNoting(limiter: RequestChecker) {
    const noted: { wentOn: boolean; wasAnswered: boolean }[] = [];
    const limit = createNodeMiddleware(limiter, {
      identify: () => ({ customerId: "initech", tier: "free" }),
    });
    server = createServer((req, res) => {
      let wentOn = false;
      limit(req, res, () => {
        wentOn = true;
        res.writeHead(200).end("hello");
      });
      noted.push({ wentOn, wasAnswered: res.headersSent });
    });
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    const { port } = server.address() as AddressInfo;
    const get = () => fetch(`http://127.0.0.1:${port}/v1/reports/1`);
    return { noted, get };
  }

  it("with checkNow, a decision made without the store is answered in the request's own turn", async () => {
    const { noted, get } = await serveNoting(checker(undefined, true));
    // Two admitted and one rejected by the store (a promise each), then the denial cache.
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await get()).status);
    expect(statuses).toEqual([200, 200, 429, 429]);
    expect(noted).toEqual([
      { wentOn: false, wasAnswered: false },
      { wentOn: false, wasAnswered: false },
      { wentOn: false, wasAnswered: false },
      { wentOn: false, wasAnswered: true },
    ]);
  });

  it("without checkNow, every decision is awaited, and answers the same", async () => {
    const { noted, get } = await serveNoting(checker());
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await get()).status);
    expect(statuses).toEqual([200, 200, 429, 429]);
    expect(noted.every((note) => !note.wentOn && !note.wasAnswered)).toBe(true);
  });

  it("with checkNow, a mistake of the caller still goes to next(error), at once", async () => {
    const limit = createNodeMiddleware(checker(undefined, true), {
      identify: () => ({ customerId: "not valid!", tier: "free" }),
    });
    const errorsAtReturn: number[] = [];
    server = createServer((req, res) => {
      const errors: unknown[] = [];
      limit(req, res, (error?: unknown) => {
        errors.push(error);
        res.writeHead(500).end(String(error));
      });
      errorsAtReturn.push(errors.length);
    });
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    const { port } = server.address() as AddressInfo;
    const response = await fetch(`http://127.0.0.1:${port}/`);
    expect(response.status).toBe(500);
    expect(await response.text()).toMatch(/is not a valid customer id/);
    expect(errorsAtReturn).toEqual([1]);
  });
});
