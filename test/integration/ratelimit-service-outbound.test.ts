/**
 * Outbound budgets over HTTP: two real rate-limit service processes on one Redis, called as a
 * caller that is not Node calls them (plain HTTP, JSON bodies). Turns are compared in Redis time,
 * which every grant carries (`turnAtMs`); what a refusal or an abort charged is read back from
 * the next turn Redis gives. No wall-clock assertion.
 */
import { execFile } from "node:child_process";
import path from "node:path";
import { setTimeout as pause } from "node:timers/promises";
import { promisify } from "node:util";
import type { TOutboundBudgetInput } from "@limitplane/enforcer/policy";
import { publishTestSnapshot } from "@limitplane/enforcer/testing";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import {
  OUTBOUND_SLOT_LOST_TYPE,
  OUTBOUND_WAIT_EXCEEDED_TYPE,
} from "@/lib/ratelimit-service/outbound-routes";
import { filePrefix, promSample, waitFor } from "./helpers/gateway-processes";
import {
  type ServiceProcess,
  startService,
  TEST_SECRET,
  waitForReady,
} from "./helpers/ratelimit-service-processes";
import { snapshotVersion } from "./helpers/snapshots";

/** One turn every 100 ms, burst 1. */
const PACED: TOutboundBudgetInput = {
  name: "paced",
  limit: { algorithm: "token-bucket", capacity: 1, refillPerSec: 10 },
  maxWaitMs: 20_000,
  keyBy: "account",
};
const PACED_INTERVAL_MS = 100;
/** Two at once, then one every 5 s. */
const SLOW: TOutboundBudgetInput = {
  name: "slow",
  limit: { algorithm: "token-bucket", capacity: 2, refillPerSec: 0.2 },
  maxWaitMs: 60_000,
  keyBy: "account",
};
const SLOW_INTERVAL_MS = 5_000;
/** At most 3 in flight per key, no rate. */
const POOL: TOutboundBudgetInput = {
  name: "pool",
  limit: null,
  concurrency: { max: 3, slotTtlMs: 5_000 },
  maxWaitMs: 20_000,
  keyBy: "account",
};
/** One in flight, lapsing 1 s after its last renewal. */
const SOLO: TOutboundBudgetInput = {
  name: "solo",
  limit: null,
  concurrency: { max: 1, slotTtlMs: 1_000 },
  maxWaitMs: 20_000,
  keyBy: "account",
};

/** Service B caps every wait at this, below the budgets' own. */
const B_MAX_WAIT_MS = 3_000;

const prefix = filePrefix("ro");
let redis: Redis;
let serviceA: ServiceProcess;
let serviceB: ServiceProcess;
let run = 0;

function freshKey(): string {
  run += 1;
  return `acct-${run}-${Date.now().toString(36)}`;
}

interface Reply {
  readonly status: number;
  readonly headers: Headers;
  readonly body: Record<string, unknown>;
}

async function post(
  service: ServiceProcess,
  path: string,
  body: unknown,
  init: { headers?: Record<string, string>; method?: string; signal?: AbortSignal } = {},
): Promise<Reply> {
  const response = await fetch(`${service.httpUrl}${path}`, {
    method: init.method ?? "POST",
    headers: {
      "x-limitplane-secret": TEST_SECRET,
      "content-type": "application/json",
      ...init.headers,
    },
    ...(body === undefined ? {} : { body: typeof body === "string" ? body : JSON.stringify(body) }),
    signal: init.signal,
  });
  const text = await response.text();
  return {
    status: response.status,
    headers: response.headers,
    body: text === "" ? {} : (JSON.parse(text) as Record<string, unknown>),
  };
}

function acquire(service: ServiceProcess, budget: string, body: unknown, signal?: AbortSignal) {
  return post(service, `/v1/outbound/${budget}/acquire`, body, { signal });
}

function slotOf(reply: Reply): { id: string; ttlMs: number } {
  expect(reply.status, JSON.stringify(reply.body)).toBe(200);
  const slot = reply.body.slot as { id: string; ttlMs: number } | undefined;
  if (slot === undefined) throw new Error(`no slot in ${JSON.stringify(reply.body)}`);
  return slot;
}

function turnOf(reply: Reply): number {
  expect(reply.status, JSON.stringify(reply.body)).toBe(200);
  expect(reply.body.granted).toBe(true);
  return reply.body.turnAtMs as number;
}

function expectWaitExceeded(reply: Reply): void {
  expect(reply.status, JSON.stringify(reply.body)).toBe(429);
  expect(reply.headers.get("content-type")).toBe("application/problem+json");
  expect(reply.body.type).toBe(OUTBOUND_WAIT_EXCEEDED_TYPE);
  expect(Number(reply.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
}

beforeAll(async () => {
  redis = new Redis(inject("redisUrl"));
  await publishTestSnapshot(
    redis,
    prefix,
    snapshotVersion(1, (input) => {
      input.outboundBudgets = [PACED, SLOW, POOL, SOLO];
    }),
  );
  [serviceA, serviceB] = await Promise.all([
    startService({ prefix, id: "rlo-a", args: ["--no-leases"] }),
    startService({
      prefix,
      id: "rlo-b",
      args: ["--no-leases"],
      env: { RATELIMIT_SERVICE_OUTBOUND_MAX_WAIT_MS: String(B_MAX_WAIT_MS) },
    }),
  ]);
  await Promise.all([waitForReady(serviceA), waitForReady(serviceB)]);
});

afterAll(async () => {
  await Promise.all([serviceA?.stop(), serviceB?.stop()]);
  redis?.disconnect();
});

describe("turns over HTTP, shared by two service processes", () => {
  it("10 concurrent callers of a 10-per-second budget are all granted, one refill apart in Redis time, never more than the bucket admits in a second", async () => {
    const key = freshKey();
    const replies = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        acquire(i % 2 === 0 ? serviceA : serviceB, "paced", { key }),
      ),
    );
    const turns = replies.map(turnOf).sort((a, b) => a - b);
    expect(turns).toHaveLength(10);
    for (let i = 1; i < turns.length; i++) {
      expect((turns[i] ?? 0) - (turns[i - 1] ?? 0)).toBeGreaterThanOrEqual(PACED_INTERVAL_MS - 1);
    }
    // A token bucket admits at most capacity + rate x window in any window.
    for (const start of turns) {
      expect(
        turns.filter((turn) => turn >= start && turn < start + 1_000).length,
      ).toBeLessThanOrEqual(1 + 10);
    }
    for (const reply of replies) {
      expect(reply.body.slot).toBeUndefined();
      expect(reply.body.waitedMs).toBeGreaterThanOrEqual(0);
    }
  });

  it("the services count those 10 calls for the budget's charts, in the installation's minute hashes", async () => {
    // Each service writes what it counted every second; the minutes are this run's only.
    const countedCalls = async () => {
      let calls = 0;
      for (const key of await redis.keys(`${prefix}metrics:min:*`)) {
        calls += Number((await redis.hget(key, "outbound:paced|calls")) ?? 0);
      }
      return calls;
    };
    await waitFor("the 10 calls counted", async () =>
      (await countedCalls()) >= 10 ? true : undefined,
    );
    expect(await countedCalls()).toBe(10);
  });

  it("a wait past its maximum is a 429 problem with Retry-After, and charges nothing: the one token left is granted at once", async () => {
    const key = freshKey();
    const first = turnOf(await acquire(serviceA, "slow", { key }));
    // Two units need the next refill, 5 s away: past a wait of 1 s.
    const late = await acquire(serviceA, "slow", { key, cost: 2, maxWaitMs: 1_000 });
    expectWaitExceeded(late);
    expect(late.body).toMatchObject({ status: 429, budget: "slow", maxWaitMs: 1_000 });
    expect(late.body.retryAfterMs as number).toBeGreaterThan(1_000);
    expect(late.body.retryAfterMs as number).toBeLessThanOrEqual(SLOW_INTERVAL_MS);
    // The budget allows 60 s; service B's own cap ends the long poll at 3 s.
    const capped = await acquire(serviceB, "slow", { key, cost: 2 });
    expectWaitExceeded(capped);
    expect(capped.body.maxWaitMs).toBe(B_MAX_WAIT_MS);
    // Had either refusal been charged, the bucket would be empty.
    const next = await acquire(serviceB, "slow", { key, maxWaitMs: 0 });
    expect(turnOf(next)).toBeGreaterThanOrEqual(first);
  });

  it("a client that disconnects mid-wait charges nothing: its turn goes to the next caller", async () => {
    const key = freshKey();
    const first = turnOf(await acquire(serviceA, "slow", { key, cost: 2 }));
    const controller = new AbortController();
    const waiting = acquire(serviceA, "slow", { key, maxWaitMs: 20_000 }, controller.signal).catch(
      (error: unknown) => error,
    );
    // The waiter holds its turn once the key's last turn moved past the first.
    const lastTurnKey = `${prefix}callers:ob:{o:slow:${key}}:t`;
    await waitFor("the waiter's turn", async () => {
      const last = await redis.hget(lastTurnKey, "t");
      return last !== null && Number(last) > first ? true : undefined;
    });
    controller.abort();
    expect(await waiting).toBeInstanceOf(Error);
    await waitFor("service A to count the aborted wait", async () => {
      const metrics = await (await fetch(`${serviceA.httpUrl}/metrics`)).text();
      const aborted = promSample(metrics, "limitplane_service_outbound_calls_total", {
        action: "acquire",
        answer: "aborted",
      });
      return aborted >= 1 ? true : undefined;
    });
    // The next caller takes the given-back turn, one refill after the first, not two.
    const next = turnOf(await acquire(serviceA, "slow", { key, maxWaitMs: 20_000 }));
    expect(Math.abs(next - first - SLOW_INTERVAL_MS)).toBeLessThanOrEqual(1);
  });
});

describe("concurrency slots over HTTP", () => {
  it("6 callers at once over two processes on a cap of 3: exactly 3 slots, 3 refusals", async () => {
    const key = freshKey();
    const replies = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        acquire(i % 2 === 0 ? serviceA : serviceB, "pool", { key, maxWaitMs: 0 }),
      ),
    );
    const granted = replies.filter((reply) => reply.status === 200);
    const refused = replies.filter((reply) => reply.status === 429);
    expect(granted).toHaveLength(3);
    expect(refused).toHaveLength(3);
    for (const reply of refused) expectWaitExceeded(reply);
    const slots = granted.map(slotOf);
    expect(new Set(slots.map((slot) => slot.id)).size).toBe(3);
    for (const slot of slots) expect(slot).toMatchObject({ id: /^[0-9a-f]{24}$/, ttlMs: 5_000 });
    expect(await redis.zcard(`${prefix}callers:ob:{o:pool:${key}}:s`)).toBe(3);
    for (const [i, slot] of slots.entries()) {
      const released = await post(i % 2 === 0 ? serviceB : serviceA, "/v1/outbound/pool/release", {
        key,
        slot: slot.id,
      });
      expect(released.status).toBe(204);
    }
    expect(await redis.zcard(`${prefix}callers:ob:{o:pool:${key}}:s`)).toBe(0);
  });

  it("10 waiting callers over two processes, each renewing and releasing: all served, never more than 3 held", async () => {
    const key = freshKey();
    let held = 0;
    let mostHeld = 0;
    const statuses: number[] = [];
    await Promise.all(
      Array.from({ length: 10 }, async (_, i) => {
        const service = i % 2 === 0 ? serviceA : serviceB;
        const slot = slotOf(await acquire(service, "pool", { key, maxWaitMs: B_MAX_WAIT_MS }));
        held += 1;
        mostHeld = Math.max(mostHeld, held);
        const renewed = await post(service, "/v1/outbound/pool/renew", { key, slot: slot.id });
        statuses.push(renewed.status);
        held -= 1;
        const released = await post(service, "/v1/outbound/pool/release", { key, slot: slot.id });
        statuses.push(released.status);
      }),
    );
    expect(mostHeld).toBeLessThanOrEqual(3);
    expect(statuses.filter((status) => status === 200)).toHaveLength(10);
    expect(statuses.filter((status) => status === 204)).toHaveLength(10);
    expect(await redis.zcard(`${prefix}callers:ob:{o:pool:${key}}:s`)).toBe(0);
  });

  it("renewals keep a slot past its TTL; release frees it; a second or late release is a harmless 204 that frees no other holder's slot; renewing it then is a 410", async () => {
    const key = freshKey();
    const first = slotOf(await acquire(serviceA, "solo", { key }));
    expect(first.ttlMs).toBe(1_000);
    // Four renewals 300 ms apart from the other process: 1.2 s, past the 1 s TTL.
    for (let i = 0; i < 4; i++) {
      await pause(300);
      const renewed = await post(serviceB, "/v1/outbound/solo/renew", { key, slot: first.id });
      expect(renewed.status, JSON.stringify(renewed.body)).toBe(200);
      expect(renewed.body.slot).toEqual(first);
    }
    expectWaitExceeded(await acquire(serviceB, "solo", { key, maxWaitMs: 0 }));

    expect(
      (await post(serviceB, "/v1/outbound/solo/release", { key, slot: first.id })).status,
    ).toBe(204);
    expect(
      (await post(serviceA, "/v1/outbound/solo/release", { key, slot: first.id })).status,
    ).toBe(204);
    const second = slotOf(await acquire(serviceA, "solo", { key, maxWaitMs: 0 }));
    expect(second.id).not.toBe(first.id);
    // The first holder's late release leaves the second's slot held.
    expect(
      (await post(serviceA, "/v1/outbound/solo/release", { key, slot: first.id })).status,
    ).toBe(204);
    expectWaitExceeded(await acquire(serviceB, "solo", { key, maxWaitMs: 0 }));
    const lost = await post(serviceB, "/v1/outbound/solo/renew", { key, slot: first.id });
    expect(lost.status).toBe(410);
    expect(lost.headers.get("content-type")).toBe("application/problem+json");
    expect(lost.body).toMatchObject({ type: OUTBOUND_SLOT_LOST_TYPE, status: 410, budget: "solo" });
    await post(serviceA, "/v1/outbound/solo/release", { key, slot: second.id });
  });

  it("a slot its holder stops renewing is freed after its TTL: a waiter gets it, and the old holder's renewal is a 410", async () => {
    const key = freshKey();
    const abandoned = slotOf(await acquire(serviceA, "solo", { key }));
    const next = slotOf(await acquire(serviceB, "solo", { key, maxWaitMs: B_MAX_WAIT_MS }));
    expect(next.id).not.toBe(abandoned.id);
    const renewed = await post(serviceA, "/v1/outbound/solo/renew", { key, slot: abandoned.id });
    expect(renewed.status).toBe(410);
    expect(renewed.body.type).toBe(OUTBOUND_SLOT_LOST_TYPE);
    expect((await post(serviceB, "/v1/outbound/solo/release", { key, slot: next.id })).status).toBe(
      204,
    );
  });
});

describe("examples/callers/acquire.sh, the curl example", () => {
  const script = path.resolve(import.meta.dirname, "../../examples/callers/acquire.sh");
  const runScript = (args: string[], env: Record<string, string> = {}) =>
    promisify(execFile)("sh", [script, ...args], {
      env: {
        ...process.env,
        RATELIMIT_SERVICE_URL: serviceA.httpUrl,
        RATELIMIT_SERVICE_SECRET: TEST_SECRET,
        ...env,
      },
    }).then(
      ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
      (error: { code?: number; stdout?: string; stderr?: string }) => ({
        code: error.code ?? -1,
        stdout: error.stdout ?? "",
        stderr: error.stderr ?? "",
      }),
    );

  it("runs the command in its turn, renewing the slot while it runs (past its 1 s TTL) and freeing it after", async () => {
    const key = freshKey();
    // The command, 1.5 s in, asks for the same single slot: still held, so refused.
    const result = await runScript([
      "solo",
      key,
      "--",
      "sh",
      "-c",
      `sleep 1.5 && curl -s -o /dev/null -w '%{http_code}' -X POST -H 'x-limitplane-secret: ${TEST_SECRET}' --data '{"key":"${key}","maxWaitMs":0}' ${serviceB.httpUrl}/v1/outbound/solo/acquire`,
    ]);
    expect(result).toMatchObject({ code: 0, stdout: "429" });
    const after = slotOf(await acquire(serviceA, "solo", { key, maxWaitMs: 0 }));
    await post(serviceA, "/v1/outbound/solo/release", { key, slot: after.id });
  });

  it("exits 75 with the Retry-After when the wait would pass its maximum", async () => {
    const key = freshKey();
    const held = slotOf(await acquire(serviceA, "solo", { key }));
    const result = await runScript(["solo", key, "--", "true"], { MAX_WAIT_MS: "0" });
    expect(result.code).toBe(75);
    expect(result.stderr).toMatch(/^acquire\.sh: no turn within the wait; retry after \d+ s: /);
    await post(serviceA, "/v1/outbound/solo/release", { key, slot: held.id });
  });
});

describe("hostile input", () => {
  const ACQUIRE = "/v1/outbound/paced/acquire";
  const RENEW = "/v1/outbound/pool/renew";
  const cases: {
    name: string;
    path: string;
    body: unknown;
    status: number;
    detail: RegExp;
  }[] = [
    {
      name: "an empty body, read as {} (the default key is empty, no account)",
      path: ACQUIRE,
      body: "",
      status: 400,
      detail: /key must be 1 to 128 characters/,
    },
    {
      name: "malformed JSON",
      path: ACQUIRE,
      body: '{"key":',
      status: 400,
      detail: /^body: is not valid JSON$/,
    },
    {
      name: "an array",
      path: ACQUIRE,
      body: [],
      status: 400,
      detail: /^body: expected a JSON object/,
    },
    {
      name: "an unknown field",
      path: ACQUIRE,
      body: { key: "a", maxWait: 5 },
      status: 400,
      detail: /^body: expected only: key, cost, maxWaitMs$/,
    },
    {
      name: "a cost of NaN (as text)",
      path: ACQUIRE,
      body: { key: "a", cost: "NaN" },
      status: 400,
      detail: /^cost: must be a number$/,
    },
    {
      name: "a negative cost",
      path: ACQUIRE,
      body: { key: "a", cost: -1 },
      status: 400,
      detail: /^cost: must be a whole number from 1/,
    },
    {
      name: "a cost of 0",
      path: ACQUIRE,
      body: { key: "a", cost: 0 },
      status: 400,
      detail: /^cost: must be a whole number from 1/,
    },
    {
      name: "a fractional cost",
      path: ACQUIRE,
      body: { key: "a", cost: 1.5 },
      status: 400,
      detail: /^cost: must be a whole number$/,
    },
    {
      name: "a cost the limit can never admit",
      path: ACQUIRE,
      body: { key: "a", cost: 5 },
      status: 400,
      detail: /cost 5 exceeds what the limit can ever admit/,
    },
    {
      name: "a negative maxWaitMs",
      path: ACQUIRE,
      body: { key: "a", maxWaitMs: -1 },
      status: 400,
      detail: /^maxWaitMs: must be a number of ms from 0$/,
    },
    {
      name: "maxWaitMs as text",
      path: ACQUIRE,
      body: { key: "a", maxWaitMs: "10" },
      status: 400,
      detail: /^maxWaitMs: must be a number$/,
    },
    {
      name: "maxWaitMs past the budget's",
      path: ACQUIRE,
      body: { key: "a", maxWaitMs: 30_000 },
      status: 400,
      detail: /maxWaitMs must be at most the budget's maxWaitMs 20000/,
    },
    {
      name: "a key that is not text",
      path: ACQUIRE,
      body: { key: 42 },
      status: 400,
      detail: /^key: must be text$/,
    },
    {
      name: "a key over 255 characters",
      path: ACQUIRE,
      body: { key: "a".repeat(256) },
      status: 400,
      detail: /^key: must be at most 255 characters$/,
    },
    {
      name: "a key of the wrong shape",
      path: ACQUIRE,
      body: { key: "not an account!" },
      status: 400,
      detail: /key must be 1 to 128 characters/,
    },
    {
      name: "a body past 4 KiB",
      path: ACQUIRE,
      body: { key: "a".repeat(5_000) },
      status: 413,
      detail: /at most 4096 bytes/,
    },
    {
      name: "a renewal without a slot",
      path: RENEW,
      body: { key: "a" },
      status: 400,
      detail: /^slot: must be the slot id acquire gave$/,
    },
    {
      name: "a renewal of a slot that is no id",
      path: RENEW,
      body: { key: "a", slot: "zz" },
      status: 400,
      detail: /slot must be the id acquire gave \(24 hex characters\)/,
    },
    {
      name: "a renewal on a budget without slots",
      path: "/v1/outbound/paced/renew",
      body: { key: "a", slot: "0".repeat(24) },
      status: 400,
      detail: /this budget has no concurrency cap/,
    },
    {
      name: "an unknown budget",
      path: "/v1/outbound/no-such-budget/acquire",
      body: {},
      status: 404,
      detail: /no outbound budget is named "no-such-budget"/,
    },
  ];

  it.each(cases)("$name: $status, naming what is wrong", async ({ path, body, status, detail }) => {
    const reply = await post(serviceA, path, body);
    expect(reply.status, JSON.stringify(reply.body)).toBe(status);
    expect(reply.headers.get("content-type")).toBe("application/problem+json");
    expect(reply.body.detail).toMatch(detail);
  });

  it("nothing any refusal asked for was charged: the budget's next caller is granted at once", async () => {
    expect(turnOf(await acquire(serviceA, "paced", { key: "a", maxWaitMs: 0 }))).toBeGreaterThan(0);
  });

  it("a method other than POST: 405 with Allow: POST", async () => {
    const reply = await post(serviceA, ACQUIRE, undefined, { method: "GET" });
    expect(reply.status).toBe(405);
    expect(reply.headers.get("allow")).toBe("POST");
  });

  it("no secret, or a wrong one: 401, and the budget is not named", async () => {
    for (const secret of [undefined, "wrong-secret-0123456789abcdef0123456789"]) {
      const response = await fetch(`${serviceA.httpUrl}/v1/outbound/no-such-budget/acquire`, {
        method: "POST",
        headers: secret === undefined ? {} : { "x-limitplane-secret": secret },
        body: "{}",
      });
      expect(response.status).toBe(401);
      expect(await response.text()).not.toContain("no-such-budget");
    }
  });
});
