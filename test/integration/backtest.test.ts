/**
 * The traffic record and the backtest end to end: demo gateways (real processes, real Redis)
 * record every decision, the worker's mover brings the record into Postgres, and the backtest
 * replays it through the pure limiter core. Token-bucket limits whose refill is negligible over a
 * burst (0.001/s) make the scripted traces' outcomes exact: a burst of 40 on capacity 20 admits
 * exactly 20, whatever the machine's speed.
 */
import { Agent } from "node:http";
import { isSampledSubject } from "@limitplane/enforcer/recording";
import { tokenBucket } from "@limitplane/enforcer/testing";
import type { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { moveTrafficRecord, pruneTrafficRecord } from "@/lib/control/backtest/move-traffic-record";
import { runBacktest } from "@/lib/control/backtest/run-backtest";
import type { ControlDeps } from "@/lib/control/deps";
import { AppError } from "@/lib/control/errors";
import { getTier } from "@/lib/control/tier/get-tier";
import { updateTier } from "@/lib/control/tier/update-tier";
import { systemClock } from "@/lib/server/composition";
import { createRedis } from "@/lib/server/redis";
import {
  filePrefix,
  type GatewayProcess,
  health,
  type Reply,
  sendRequest,
  startGateway,
  waitFor,
  waitForVersion,
} from "./helpers/gateway-processes";
import { importExamplePolicy, operatorContext } from "./helpers/policy-fixtures";
import { provideTestDatabase } from "./helpers/test-database";

const database = provideTestDatabase();
const prefix = filePrefix("bt");
let redis: Redis;
let deps: ControlDeps;
/** Two gateways recording every request, one recording half the subjects. */
let full: GatewayProcess[] = [];
let sampled: GatewayProcess;
const agent = new Agent({ keepAlive: true, maxSockets: 32 });
let moved = 0;

/** The pro customers the sampled gateway keeps (by subject hash, as the recorder picks). */
function sampledCustomers(): string[] {
  return Array.from({ length: 40 }, (_, n) => `smp-${String(n).padStart(2, "0")}`).filter((id) =>
    isSampledSubject(`c:${id}`, 0.5),
  );
}

const SLOW = 0.001;

function send(gateway: GatewayProcess, customerId: string, tier: string): Promise<Reply> {
  return sendRequest(agent, gateway, "/v1/things", {
    authorization: `Bearer ${customerId}`,
    "x-tier": tier,
  });
}

/** `count` simultaneous requests for one customer over `gateways`; the 200s. */
async function burst(
  gateways: readonly GatewayProcess[],
  count: number,
  customerId: string,
  tier: string,
): Promise<number> {
  const replies = await Promise.all(
    Array.from({ length: count }, (_, i) =>
      send(gateways[i % gateways.length] as GatewayProcess, customerId, tier),
    ),
  );
  return replies.filter((reply) => reply.status === 200).length;
}

/** Runs the mover until the record holds `expected` requests (gateways flush every second). */
async function moveEverything(expected: number): Promise<void> {
  await waitFor(
    `the record to hold ${expected} requests`,
    async () => {
      const result = await moveTrafficRecord(
        { db: deps.db, redis, prefix, clock: systemClock },
        { retentionHours: 48 },
      );
      moved += result.requestsMoved;
      return moved >= expected ? true : undefined;
    },
    { timeoutMs: 30_000, intervalMs: 200 },
  );
  expect(moved).toBe(expected);
}

async function setTier(name: string, capacity: number): Promise<void> {
  const tier = await getTier(name, deps);
  const receipt = await updateTier(
    { name, expectedVersion: tier.version, limit: tokenBucket(capacity, SLOW) },
    operatorContext(`backtest fixture: ${name} at ${capacity}`),
    deps,
  );
  if (receipt.policyVersion === null) throw new Error("no new version");
  await waitForVersion([...full, sampled], receipt.policyVersion);
}

const freeDraft = (capacity: number) =>
  ({ kind: "tier", name: "free", limit: tokenBucket(capacity, SLOW) }) as const;

beforeAll(async () => {
  redis = createRedis("control", { url: inject("redisUrl") });
  const db = database.current().db;
  deps = { db, publisher: { db, redis, prefix, clock: systemClock }, clock: systemClock };
  await importExamplePolicy(deps);
  const args = ["--expected-gateways", "3", "--no-local-stage", "--record"];
  [full, sampled] = await Promise.all([
    Promise.all([1, 2].map((n) => startGateway({ prefix, id: `bt-${n}`, args }))),
    startGateway({ prefix, id: "bt-sampled", args: [...args, "--record-sample-rate", "0.5"] }),
  ]);
  await waitFor("a policy on every gateway", async () =>
    (await Promise.all([...full, sampled].map(health))).every((h) => h.policy !== null)
      ? true
      : undefined,
  );
  await setTier("free", 20);
  await setTier("pro", 20);
});

afterAll(async () => {
  agent.destroy();
  await Promise.all([...full, sampled].map((gateway) => gateway?.stop()));
  redis.disconnect();
});

describe("the traffic record and the backtest, with real gateways", () => {
  /** What the gateways admitted, per customer, in the recorded bursts. */
  const admittedBy = new Map<string, number>();
  const burstCustomers = ["bt-ann", "bt-bob", "bt-cy"];

  it("records every request, and the mover stores it once", async () => {
    for (const customerId of burstCustomers) {
      admittedBy.set(customerId, await burst(full, 40, customerId, "free"));
    }
    // 40 pro customers through the sampled gateway: 40 requests each, 20 admitted each.
    for (let n = 0; n < 40; n++) {
      expect(await burst([sampled], 40, `smp-${String(n).padStart(2, "0")}`, "pro")).toBe(20);
    }
    // A burst of 40 on capacity 20 with a negligible refill admits exactly 20.
    expect([...admittedBy.values()]).toEqual([20, 20, 20]);
    // The sampled gateway records the subjects its rate keeps, whole: 40 requests each.
    await moveEverything(120 + 40 * sampledCustomers().length);
    // A second run moves nothing: the cursor committed with the rows.
    const again = await moveTrafficRecord(
      { db: deps.db, redis, prefix, clock: systemClock },
      { retentionHours: 48 },
    );
    expect(again.requestsMoved).toBe(0);
  });

  it("a backtest of the policy in force reproduces every recorded decision exactly", async () => {
    const result = await runBacktest(
      { draft: freeDraft(20), windowMs: 600_000, warmUpMs: 0, replayAll: true },
      deps,
    );
    expect(result.trust.fidelity.compared).toBe(result.replayedRequests);
    expect(result.trust.fidelity.matched).toBe(result.trust.fidelity.compared);
    expect(result.trust.fidelity.rate).toBe(1);
    const free = result.byTier.find((t) => t.tier === "free");
    expect(free).toMatchObject({ requests: 120, nowRejected: 60, draftRejected: 60 });
    expect(result.totals.moreRejected).toBe(0);
    expect(result.totals.moreAdmitted).toBe(0);
    expect(result.mostAffected).toEqual([]);
  });

  it("a stricter draft reports exactly the extra rejections of the scripted bursts", async () => {
    const result = await runBacktest(
      { draft: freeDraft(12), windowMs: 600_000, warmUpMs: 0 },
      deps,
    );
    // Capacity 12 instead of 20: 8 more of each customer's 40 are rejected.
    expect(result.totals.moreRejected).toBe(3 * 8);
    expect(result.totals.moreAdmitted).toBe(0);
    expect(result.customersAffected).toBe(3);
    expect(result.mostAffected.map((a) => [a.customerId, a.moreRejected, a.bindingDraft])).toEqual(
      burstCustomers.map((id) => [id, 8, "tier:free"]),
    );
    // Only the free customers were replayed; the fidelity of those replays is exact.
    expect(result.replayedRequests).toBe(120);
    expect(result.trust.fidelity).toMatchObject({ compared: 120, matched: 120 });
    // A looser one admits exactly 5 more of each.
    const looser = await runBacktest(
      { draft: freeDraft(25), windowMs: 600_000, warmUpMs: 0 },
      deps,
    );
    expect(looser.totals.moreAdmitted).toBe(3 * 5);
    expect(looser.totals.moreRejected).toBe(0);
  });

  it("sampling is by subject, scaled by 1 / rate, and says so", async () => {
    const result = await runBacktest(
      {
        draft: { kind: "tier", name: "pro", limit: tokenBucket(12, SLOW) },
        windowMs: 600_000,
        warmUpMs: 0,
      },
      deps,
    );
    expect(result.trust.sampleRates).toEqual([0.5, 1]);
    expect(result.trust.notes.join(" ")).toMatch(/Sampled by subject at 50%/);
    const pro = result.byTier.find((t) => t.tier === "pro");
    if (pro === undefined) throw new Error("no pro traffic recorded");
    // Each sampled customer is recorded whole (40 requests, 20 rejected) and counts twice.
    const kept = pro.customersAffected;
    expect(kept).toBe(sampledCustomers().length);
    expect(kept).toBeGreaterThan(0);
    expect(kept).toBeLessThan(40);
    expect(pro.requests).toBe(kept * 40 * 2);
    expect(pro.nowRejected).toBe(kept * 20 * 2);
    expect(result.totals.moreRejected).toBe(kept * 8 * 2);
    // The rejected share is the true one exactly (every customer behaved alike): 20 of 40.
    expect(pro.nowRejected / pro.requests).toBe(20 / 40);
    // Recorded requests are counted as recorded, unscaled, next to the estimate.
    expect(result.trust.recordedRequests).toBe(120 + kept * 40);
    expect(result.trust.estimatedRequests).toBe(120 + kept * 40 * 2);
  });

  it("an invalid draft is refused naming the field", async () => {
    const refusal = await runBacktest(
      { draft: { kind: "tier", name: "free", limit: tokenBucket(-1, 1) } },
      deps,
    ).catch((error: unknown) => error);
    expect(refusal).toBeInstanceOf(AppError);
    expect((refusal as AppError).fieldErrors[0]?.path).toBe("draft.limit.capacity");
    const window = await runBacktest(
      { draft: freeDraft(12), windowMs: 49 * 3_600_000 },
      deps,
    ).catch((error: unknown) => error);
    expect((window as AppError).fieldErrors[0]?.path).toBe("windowMs");
  });

  it("a window with no traffic says it is empty", async () => {
    const result = await runBacktest(
      { draft: freeDraft(12), windowMs: 60_000, warmUpMs: 0 },
      { db: deps.db, clock: { nowMs: () => Date.now() - 86_400_000 } },
    );
    expect(result.isEmpty).toBe(true);
    expect(result.trust.recordedRequests).toBe(0);
  });

  it("retention prunes what is older than TRAFFIC_RECORD_RETENTION_HOURS, and nothing newer", async () => {
    const rows = await deps.db.trafficBatch.count();
    expect(rows).toBeGreaterThan(0);
    expect(await pruneTrafficRecord({ db: deps.db, clock: systemClock }, 48)).toBe(0);
    expect(await deps.db.trafficBatch.count()).toBe(rows);
    const later = () => Date.now() + 49 * 3_600_000;
    expect(await pruneTrafficRecord({ db: deps.db, clock: { nowMs: later } }, 48)).toBe(rows);
    expect(await deps.db.trafficBatch.count()).toBe(0);
  });
});
