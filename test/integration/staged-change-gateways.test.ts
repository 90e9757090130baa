/**
 * A staged change through the control plane's services, enforced by two demo gateways: 1,000
 * customers of one tier, each with exact counts, at a 10 % slice, then 25 %, then aborted. The
 * tier's bucket refills 0.000001 tokens a second, so what a customer is admitted depends only on
 * what it was sent, never on timing: the counts are exact whatever the machine's load.
 */
import { Agent } from "node:http";
import { slicePointOf } from "@limitplane/enforcer/policy";
import { tokenBucket } from "@limitplane/enforcer/testing";
import type { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { ControlDeps } from "@/lib/control/deps";
import { isAppError } from "@/lib/control/errors";
import { abortStagedChange } from "@/lib/control/staged-change/abort-staged-change";
import { advanceStagedChange } from "@/lib/control/staged-change/advance-staged-change";
import { pauseStagedChange } from "@/lib/control/staged-change/pause-staged-change";
import { resumeStagedChange } from "@/lib/control/staged-change/resume-staged-change";
import { startStagedChange } from "@/lib/control/staged-change/start-staged-change";
import { createTier } from "@/lib/control/tier/create-tier";
import { systemClock } from "@/lib/server/composition";
import { createRedis } from "@/lib/server/redis";
import {
  filePrefix,
  type GatewayProcess,
  type Reply,
  sendRequest,
  startGateways,
  waitFor,
  waitForVersion,
} from "./helpers/gateway-processes";
import { importExamplePolicy, operatorContext, uniqueName } from "./helpers/policy-fixtures";
import { provideTestDatabase } from "./helpers/test-database";

const database = provideTestDatabase();
const prefix = filePrefix("stg");
const agent = new Agent({ keepAlive: true, maxSockets: 32 });
let redis: Redis;
let deps: ControlDeps;
let gateways: GatewayProcess[] = [];

/** Requests go to the example's `reports` class, which costs 10: 8 requests, then 3. */
const REQUEST_COST = 10;
const OLD_CAPACITY = 8 * REQUEST_COST;
const NEW_CAPACITY = 3 * REQUEST_COST;
/** Slow enough that no token comes back during the test: counts depend on requests alone. */
const NO_REFILL = 0.000001;
const tier = uniqueName("stg");
const customers = Array.from({ length: 1000 }, (_, index) => `${tier}-c${index}`);

beforeAll(async () => {
  redis = createRedis("control", { url: inject("redisUrl") });
  const db = database.current().db;
  deps = { db, publisher: { db, redis, prefix, clock: systemClock }, clock: systemClock };
  await importExamplePolicy(deps);
  await createTier(
    { name: tier, limit: tokenBucket(OLD_CAPACITY, NO_REFILL) },
    operatorContext("a tier for the staged change"),
    deps,
  );
  gateways = await startGateways(2, { prefix, id: "stg", args: ["--expected-gateways", "2"] });
  await waitFor("a published policy on every gateway", async () => {
    const reports = await Promise.all(
      gateways.map(async (gateway) => (await fetch(`${gateway.url}/healthz`)).json()),
    );
    return reports.every((report) => report.policy?.version != null) ? true : undefined;
  });
}, 120_000);

afterAll(async () => {
  agent.destroy();
  await Promise.all(gateways.map((gateway) => gateway.stop()));
  redis.disconnect();
});

interface CustomerReplies {
  readonly admitted: number;
  readonly rejectedBy: readonly string[];
}

/** `perCustomer` requests from every customer, spread over the gateways, 64 at a time. */
async function sendRound(perCustomer: number): Promise<Map<string, CustomerReplies>> {
  const jobs = customers.flatMap((customer) => Array.from({ length: perCustomer }, () => customer));
  const replies: { customer: string; reply: Reply }[] = [];
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
      replies.push({ customer, reply });
    }
  };
  await Promise.all(Array.from({ length: 64 }, worker));
  const byCustomer = new Map<string, { admitted: number; rejectedBy: string[] }>();
  for (const { customer, reply } of replies) {
    const entry = byCustomer.get(customer) ?? { admitted: 0, rejectedBy: [] };
    if (reply.status === 200) entry.admitted += 1;
    else if (reply.status === 429) entry.rejectedBy.push(JSON.parse(reply.body).scope);
    else throw new Error(`unexpected ${reply.status} for ${customer}: ${reply.body}`);
    byCustomer.set(customer, entry);
  }
  return byCustomer;
}

function expectCounts(
  got: Map<string, CustomerReplies>,
  expected: (point: number) => CustomerReplies,
  id: string,
) {
  const mismatches: string[] = [];
  for (const customer of customers) {
    const want = expected(slicePointOf(id, customer));
    const actual = got.get(customer) ?? { admitted: 0, rejectedBy: [] };
    if (JSON.stringify(actual) !== JSON.stringify(want)) {
      mismatches.push(`${customer}: ${JSON.stringify(actual)}, expected ${JSON.stringify(want)}`);
    }
  }
  expect(mismatches.slice(0, 10)).toEqual([]);
}

const times = (count: number, scope: string) => Array.from({ length: count }, () => scope);

describe("a staged change over 1,000 customers, enforced by two gateways", () => {
  it("enforces exactly the slice, widens by exactly the next slice, keeps counters, and aborts to the old limit", async () => {
    const id = uniqueName("stg-change");
    const slice = `candidate:${id}/slice`;
    const old = `tier:${tier}`;
    const started = await startStagedChange(
      {
        id,
        target: old,
        limit: tokenBucket(NEW_CAPACITY, NO_REFILL),
        steps: [
          { percent: 10, dwellMs: 3_600_000 },
          { percent: 25, dwellMs: 3_600_000 },
          { percent: 100, dwellMs: 3_600_000 },
        ],
      },
      operatorContext("stricter tier, staged"),
      deps,
    );
    expect(started.stagedChange).toMatchObject({
      state: "running",
      stepIndex: 0,
      sliceBasisPoints: 1000,
      previousLimit: tokenBucket(OLD_CAPACITY, NO_REFILL),
    });
    if (started.policyVersion === null) throw new Error("no version");
    await waitForVersion(gateways, started.policyVersion, 60_000);

    // 10 %: the slice has 3, everyone else 8; four requests each.
    const first = await sendRound(4);
    expectCounts(
      first,
      (point) =>
        point < 1000 ? { admitted: 3, rejectedBy: [slice] } : { admitted: 4, rejectedBy: [] },
      id,
    );
    const inFirst = customers.filter((customer) => slicePointOf(id, customer) < 1000).length;
    expect(inFirst).toBeGreaterThan(60);
    expect(inFirst).toBeLessThan(140);

    // Pausing holds the step and changes nothing the gateways do; resuming continues it.
    const paused = await pauseStagedChange(
      { id, expectedVersion: started.stagedChange.version },
      operatorContext("looking at the chart"),
      deps,
    );
    expect(paused.policyVersion).toBeNull();
    const resumed = await resumeStagedChange(
      { id, expectedVersion: paused.stagedChange.version },
      operatorContext("looks fine"),
      deps,
    );

    // 25 %: the first slice has nothing left (its counter survived the step); the next slice
    // moves to 3 (its 4 remaining clamp to 3); the rest keep their 4 of 8.
    const advanced = await advanceStagedChange(
      { id, expectedVersion: resumed.stagedChange.version },
      operatorContext("next step"),
      deps,
    );
    expect(advanced.stagedChange).toMatchObject({ stepIndex: 1, sliceBasisPoints: 2500 });
    if (advanced.policyVersion === null) throw new Error("no version");
    await waitForVersion(gateways, advanced.policyVersion, 60_000);
    const second = await sendRound(4);
    expectCounts(
      second,
      (point) => {
        if (point < 1000) return { admitted: 0, rejectedBy: times(4, slice) };
        if (point < 2500) return { admitted: 3, rejectedBy: [slice] };
        return { admitted: 4, rejectedBy: [] };
      },
      id,
    );

    // Abort: everyone is back under the tier's limit of 8, every counter continuing: each
    // customer has used 3, 7 or 8 of it, and none has anything left (a reset would admit 2).
    const aborted = await abortStagedChange(
      { id, expectedVersion: advanced.stagedChange.version },
      operatorContext("abort"),
      deps,
    );
    expect(aborted.stagedChange.state).toBe("aborted");
    if (aborted.policyVersion === null) throw new Error("no version");
    await waitForVersion(gateways, aborted.policyVersion, 60_000);
    const third = await sendRound(2);
    expectCounts(third, () => ({ admitted: 0, rejectedBy: times(2, old) }), id);

    const audit = await database.current().db.auditEntry.findMany({
      where: { entityType: "staged-change", entityId: id },
      orderBy: { id: "asc" },
      select: { action: true, policyVersion: true },
    });
    expect(audit.map((entry) => entry.action)).toEqual([
      "staged-change.start",
      "staged-change.pause",
      "staged-change.resume",
      "staged-change.advance",
      "staged-change.abort",
    ]);
    expect(audit.map((entry) => entry.policyVersion)).toEqual([
      started.policyVersion,
      null,
      null,
      advanced.policyVersion,
      aborted.policyVersion,
    ]);
    // Aborting twice is refused, naming the state.
    await expect(
      abortStagedChange(
        { id, expectedVersion: aborted.stagedChange.version },
        operatorContext("again"),
        deps,
      ),
    ).rejects.toSatisfy(
      (error: unknown) =>
        isAppError(error) &&
        error.code === "CONFLICT" &&
        error.message ===
          `staged change "${id}" is aborted; only a running or paused staged change can be aborted.`,
    );
  }, 300_000);
});
