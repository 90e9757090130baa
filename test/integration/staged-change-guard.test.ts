/**
 * The staged change's guard and step clock, driven with real traffic through two demo gateways and
 * the worker's supervision run, on an injected clock: the guard's windows end when the test moves
 * the clock on, after the gateways' counts of each round have reached Redis (never after a sleep).
 *
 * - A change whose new limit rejects 60 % of the slice's requests, against 1 % for the rest, is
 *   reverted at the second window; the audit entry, the row and the webhook carry the figures, and
 *   once every gateway runs the reverting version the slice is under the old limit.
 * - A change whose slice behaves like the rest advances when its dwell passes and completes.
 */
import { Agent, createServer, type Server } from "node:http";
import { slicePointOf } from "@limitplane/enforcer/policy";
import { tokenBucket } from "@limitplane/enforcer/testing";
import type { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { deliverAlertWebhooks } from "@/lib/control/alerts/deliver-alert-webhooks";
import { getStagedChange } from "@/lib/control/staged-change/get-staged-change";
import { startStagedChange } from "@/lib/control/staged-change/start-staged-change";
import {
  readSideTotals,
  type SuperviseDeps,
  superviseStagedChanges,
} from "@/lib/control/staged-change/supervise-staged-changes";
import { createTier } from "@/lib/control/tier/create-tier";
import { getTier } from "@/lib/control/tier/get-tier";
import { createRedis } from "@/lib/server/redis";
import {
  filePrefix,
  type GatewayProcess,
  sendRequest,
  startGateways,
  waitFor,
  waitForVersion,
} from "./helpers/gateway-processes";
import { importExamplePolicy, operatorContext, uniqueName } from "./helpers/policy-fixtures";
import { provideTestDatabase } from "./helpers/test-database";

const database = provideTestDatabase();
const prefix = filePrefix("sgd");
const agent = new Agent({ keepAlive: true, maxSockets: 32 });
/** The `reports` class of the example policy costs 10 per request. */
const COST = 10;
const NO_REFILL = 0.000001;
const WINDOW_MS = 2_000;
let redis: Redis;
let gateways: GatewayProcess[] = [];
/**
 * The injected clock: the wall clock (the enforcers' per-minute counts are keyed by it) plus what
 * the test has moved it on by, so a guard window ends exactly when the test says.
 */
let offsetMs = 0;
const clockNowMs = () => Date.now() + offsetMs;
let deps: SuperviseDeps;
let receiver: Server;
let receiverUrl = "";
const received: { alertKey: string; alert: { message: string; figures: unknown } }[] = [];

beforeAll(async () => {
  redis = createRedis("control", { url: inject("redisUrl") });
  const db = database.current().db;
  const clock = { nowMs: clockNowMs };
  deps = { db, publisher: { db, redis, prefix, clock }, clock, live: { redis, prefix } };
  await importExamplePolicy(deps);
  receiver = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      received.push(JSON.parse(Buffer.concat(chunks).toString()));
      response.writeHead(200).end("ok");
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
  const address = receiver.address();
  if (address === null || typeof address === "string") throw new Error("no port");
  receiverUrl = `http://127.0.0.1:${address.port}/hook`;
  gateways = await startGateways(2, { prefix, id: "sgd", args: ["--expected-gateways", "2"] });
}, 120_000);

afterAll(async () => {
  agent.destroy();
  await Promise.all(gateways.map((gateway) => gateway.stop()));
  await new Promise<void>((resolve) => receiver.close(() => resolve()));
  redis.disconnect();
});

async function newTier(requests: number): Promise<string> {
  const tier = uniqueName("sgd");
  await createTier(
    { name: tier, limit: tokenBucket(requests * COST, NO_REFILL) },
    operatorContext("a tier for the guard"),
    deps,
  );
  return tier;
}

/** Each customer's requests, 32 at a time over the gateways; returns the statuses. */
async function send(tier: string, plan: readonly (readonly [string, number])[]) {
  const jobs = plan.flatMap(([customer, count]) => Array.from({ length: count }, () => customer));
  const statuses: number[] = [];
  let next = 0;
  const worker = async () => {
    while (next < jobs.length) {
      const index = next++;
      const customer = jobs[index];
      const gateway = gateways[index % gateways.length];
      if (customer === undefined || gateway === undefined) return;
      const reply = await sendRequest(agent, gateway, "/v1/reports/monthly", {
        authorization: `Bearer ${customer}`,
        "x-tier": tier,
      });
      statuses.push(reply.status);
    }
  };
  await Promise.all(Array.from({ length: 32 }, worker));
  return statuses;
}

async function untilCounted(id: string, requests: number) {
  await waitFor(
    `${requests} requests counted`,
    async () => {
      const totals = await readSideTotals(await getStagedChange(id, deps), clockNowMs(), deps);
      return totals.sliceRequests + totals.restRequests >= requests ? totals : undefined;
    },
    { timeoutMs: 60_000 },
  );
}

async function supervise(id: string): Promise<string | undefined> {
  const outcomes = await superviseStagedChanges(deps);
  return outcomes.find((outcome) => outcome.id === id)?.action;
}

describe("the staged change's guard", () => {
  it("reverts a change whose slice rejects 60 % against the rest's 1 %, with the figures", async () => {
    const tier = await newTier(5);
    const id = uniqueName("sgd-bad");
    const started = await startStagedChange(
      {
        id,
        target: `tier:${tier}`,
        limit: tokenBucket(2 * COST, NO_REFILL),
        steps: [
          { percent: 50, dwellMs: 3_600_000 },
          { percent: 100, dwellMs: 3_600_000 },
        ],
        guard: { marginPercent: 5, minRequests: 20, windowMs: WINDOW_MS, consecutiveWindows: 2 },
      },
      operatorContext("a stricter tier"),
      deps,
    );
    if (started.policyVersion === null) throw new Error("no version");
    await waitForVersion(gateways, started.policyVersion, 60_000);
    expect(await supervise(id)).toBe("baseline");

    let counted = 0;
    const expectedWindows: object[] = [];
    for (const round of [1, 2]) {
      // 40 new customers, 5 requests each: the slice's are admitted 2 of 5 (60 % rejected), the
      // rest's all 5; one customer of the rest sends a sixth, its only rejection (1 in 101).
      const customers = Array.from({ length: 40 }, (_, index) => `${tier}-r${round}-${index}`);
      const rest = customers.filter((customer) => slicePointOf(id, customer) >= 5000);
      const plan = customers.map((customer) => [customer, customer === rest[0] ? 6 : 5] as const);
      const statuses = await send(tier, plan);
      const inSlice = customers.length - rest.length;
      expectedWindows.push({
        sliceRequests: 5 * inSlice,
        sliceRejected: 3 * inSlice,
        restRequests: 5 * rest.length + 1,
        restRejected: 1,
      });
      counted += statuses.length;
      await untilCounted(id, counted);
      offsetMs += WINDOW_MS;
      expect(await supervise(id)).toBe(round === 1 ? "wait" : "reverted");
    }

    const change = await getStagedChange(id, deps);
    expect(change.state).toBe("reverted");
    expect(change.endReason).toMatch(
      /^reverted by its guard: the slice's rejection rate exceeded the rest's by more than 5 points for 2 windows of 2 s in a row: slice \d+\/\d+ \(60\.0 %\) vs rest 1\/\d+ \([01]\.\d %\); slice \d+\/\d+ \(60\.0 %\) vs rest 1\/\d+ \([01]\.\d %\)$/,
    );
    expect(change.endFigures).toEqual({
      windows: expectedWindows.map((window) => ({ ...window, windowEndMs: expect.any(Number) })),
    });
    const entry = await database.current().db.auditEntry.findFirstOrThrow({
      where: { entityType: "staged-change", entityId: id, action: "staged-change.revert" },
      select: { actorType: true, after: true, reason: true, policyVersion: true },
    });
    expect(entry.actorType).toBe("system");
    expect(entry.reason).toBe(change.endReason);
    expect(entry.after).toMatchObject({ state: "reverted", endFigures: change.endFigures });

    // The webhook channel is told, with the figures.
    await deliverAlertWebhooks({ ...deps, live: null }, { urls: [receiverUrl] });
    const told = received.find((body) => body.alertKey === `staged-change-reverted:${id}`);
    expect(told?.alert.message).toContain("(60.0 %) vs rest 1/");
    expect(told?.alert.figures).toEqual(change.endFigures);

    // Once every gateway runs the reverting version, a slice customer is under the old limit.
    if (entry.policyVersion === null) throw new Error("the revert made no version");
    await waitForVersion(gateways, entry.policyVersion, 60_000);
    const sliceCustomer = Array.from({ length: 100 }, (_, i) => `${tier}-after-${i}`).find(
      (customer) => slicePointOf(id, customer) < 5000,
    );
    if (sliceCustomer === undefined) throw new Error("no slice customer");
    // Six at once: the old limit admits five (the new one would have admitted two).
    const statuses = await send(tier, [[sliceCustomer, 6]]);
    expect(statuses.filter((status) => status === 200)).toHaveLength(5);
    expect(statuses.filter((status) => status === 429)).toHaveLength(1);
  }, 300_000);

  it("a change whose slice behaves like the rest advances after its dwell and completes", async () => {
    const tier = await newTier(5);
    const id = uniqueName("sgd-good");
    const started = await startStagedChange(
      {
        id,
        target: `tier:${tier}`,
        limit: tokenBucket(6 * COST, NO_REFILL),
        steps: [
          { percent: 50, dwellMs: WINDOW_MS },
          { percent: 100, dwellMs: WINDOW_MS },
        ],
        guard: { marginPercent: 5, minRequests: 20, windowMs: WINDOW_MS, consecutiveWindows: 2 },
      },
      operatorContext("a looser tier"),
      deps,
    );
    if (started.policyVersion === null) throw new Error("no version");
    await waitForVersion(gateways, started.policyVersion, 60_000);

    let counted = 0;
    for (const [round, expected] of [
      [1, "advanced"],
      [2, "completed"],
    ] as const) {
      expect(await supervise(id)).toBe("baseline");
      const customers = Array.from({ length: 40 }, (_, index) => `${tier}-g${round}-${index}`);
      const statuses = await send(
        tier,
        customers.map((customer) => [customer, 3] as const),
      );
      expect(statuses.every((status) => status === 200)).toBe(true);
      counted += statuses.length;
      await untilCounted(id, counted);
      offsetMs += WINDOW_MS;
      expect(await supervise(id)).toBe(expected);
    }
    const change = await getStagedChange(id, deps);
    expect(change.state).toBe("completed");
    expect((await getTier(tier, deps)).limit).toMatchObject({ capacity: 6 * COST });
    const actions = await database.current().db.auditEntry.findMany({
      where: { entityType: "staged-change", entityId: id },
      orderBy: { id: "asc" },
      select: { action: true, actorType: true },
    });
    expect(actions).toEqual([
      { action: "staged-change.start", actorType: "operator" },
      { action: "staged-change.advance", actorType: "system" },
      { action: "staged-change.complete", actorType: "system" },
    ]);
  }, 300_000);
});
