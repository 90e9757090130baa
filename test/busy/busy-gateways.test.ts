/**
 * Exact when the gateway is busy: three demo gateway processes on the run's (healthy) Redis,
 * while the machine is deliberately busy (four processes spinning per core, at normal priority)
 * and one gateway at a time is frozen for 100 ms at scripted moments (SIGSTOP, then SIGCONT: to
 * the gateway that is an event loop blocked for 100 ms: its clock jumps, every timer is overdue
 * and Redis's replies wait in the socket). A busy gateway may serve slower; it must never decide
 * without Redis, and every limit must hold exactly.
 *
 * The tier is the worked example's shape (bursts of 20) with a refill so slow (one unit per
 * 1000 s) that nothing comes back during a trial however long the busy machine makes it: exact
 * means exactly 20, not 20 plus what refilled.
 *
 * This project runs on its own, after every other one (`npm run test:busy`, last in `npm test`),
 * so its spinning cores slow no other test.
 */
import { Agent } from "node:http";
import { availableParallelism } from "node:os";
import {
  publishTestSnapshot,
  type Spinners,
  startSpinners,
  tokenBucket,
} from "@limitplane/enforcer/testing";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import {
  filePrefix,
  type GatewayProcess,
  promSample,
  type Reply,
  sendRequest,
  startGateways,
  waitFor,
  waitForVersion,
} from "../integration/helpers/gateway-processes";
import { snapshotVersion } from "../integration/helpers/snapshots";

const TRIALS = 20;
const FLOOD_KEYS = 2_000;
const FLOOD_IN_FLIGHT = 48;
const FREEZE_MS = 100;

const prefix = filePrefix("bz");
let redis: Redis;
let gateways: GatewayProcess[] = [];
let spinners: Spinners;
const agent = new Agent({ keepAlive: true, maxSockets: FLOOD_IN_FLIGHT });

function gatewayAt(index: number): GatewayProcess {
  const gateway = gateways[index % gateways.length];
  if (gateway === undefined) throw new Error("no gateways");
  return gateway;
}

const as = (customerId: string) => ({ authorization: `Bearer ${customerId}`, "x-tier": "busy" });

/**
 * Freezes `gateway` for `FREEZE_MS` (the wait here is the stall's length, which the test
 * scripts, not a wait for a condition) and always lets it go on.
 */
async function freeze(gateway: GatewayProcess): Promise<void> {
  const pid = gateway.child.pid;
  if (pid === undefined) throw new Error("the gateway has no pid");
  process.kill(pid, "SIGSTOP");
  try {
    await new Promise((resolve) => setTimeout(resolve, FREEZE_MS));
  } finally {
    process.kill(pid, "SIGCONT");
  }
}

/** The gateways' counters, summed: decisions made without Redis (by reason) and slow ones. */
async function fleetCounters(): Promise<{
  withoutStore: Record<string, number>;
  fallback: number;
  slow: number[];
}> {
  const texts = await Promise.all(
    gateways.map(async (gateway) => (await fetch(`${gateway.url}/metrics`)).text()),
  );
  const withoutStore: Record<string, number> = {};
  for (const reason of ["store-error", "timeout", "circuit-open"]) {
    withoutStore[reason] = texts.reduce(
      (sum, text) => sum + promSample(text, "limitplane_decisions_without_store_total", { reason }),
      0,
    );
  }
  return {
    withoutStore,
    fallback: texts.reduce(
      (sum, text) =>
        sum + promSample(text, "limitplane_decision_sources_total", { source: "fallback" }),
      0,
    ),
    slow: texts.map((text) => promSample(text, "limitplane_store_slow_decisions_total", {})),
  };
}

beforeAll(async () => {
  redis = new Redis(inject("redisUrl"));
  await publishTestSnapshot(
    redis,
    prefix,
    snapshotVersion(1, (input) => {
      input.tiers.push({ name: "busy", displayName: "Busy", limit: tokenBucket(20, 0.001) });
    }),
  );
  gateways = await startGateways(3, { prefix, id: "bz", args: ["--expected-gateways", "3"] });
  await waitForVersion(gateways, 1);
  // Open the connections the bursts will use, on a customer of its own.
  await Promise.all(
    Array.from({ length: FLOOD_IN_FLIGHT }, (_, i) =>
      sendRequest(agent, gatewayAt(i), "/v1/things", as("warmup")),
    ),
  );
  spinners = await startSpinners(availableParallelism() * 4);
}, 180_000);

afterAll(async () => {
  await spinners?.stop();
  agent.destroy();
  await Promise.all(gateways.map((gateway) => gateway.stop()));
  redis?.disconnect();
});

describe(`a busy machine (${availableParallelism() * 4} spinning processes) and a gateway frozen ${FREEZE_MS} ms at scripted moments`, () => {
  it(`the worked example: 25 simultaneous requests over 3 gateways on a bucket of 20 admit exactly 20, in each of ${TRIALS} trials, and none is decided without Redis`, async () => {
    expect(spinners.count).toBeGreaterThanOrEqual(4);
    const admitted: number[] = [];
    for (let trial = 0; trial < TRIALS; trial++) {
      const customer = `busy-trial-${trial}`;
      const replies: Promise<Reply>[] = [];
      let frozen: Promise<void> = Promise.resolve();
      for (let i = 0; i < 25; i++) {
        replies.push(sendRequest(agent, gatewayAt(i), "/v1/things", as(customer)));
        // Half the burst is on its way: one gateway stops for 100 ms with requests in it.
        if (i === 12) frozen = freeze(gatewayAt(trial));
      }
      const answered = await Promise.all(replies);
      await frozen;
      expect(answered.every((reply) => reply.status === 200 || reply.status === 429)).toBe(true);
      admitted.push(answered.filter((reply) => reply.status === 200).length);
    }
    expect(admitted).toEqual(Array(TRIALS).fill(20));
    const counters = await fleetCounters();
    expect(counters.withoutStore).toEqual({ "store-error": 0, timeout: 0, "circuit-open": 0 });
    expect(counters.fallback).toBe(0);

    // A frozen gateway reports it as its own event-loop delay (over its last heartbeat interval).
    const frozen = gatewayAt(0);
    await freeze(frozen);
    await waitFor("the frozen gateway to report its event-loop delay", async () => {
      const text = await (await fetch(`${frozen.url}/metrics`)).text();
      const maxSeconds = promSample(text, "limitplane_event_loop_delay_seconds", { quantile: "1" });
      return maxSeconds >= (FREEZE_MS * 0.8) / 1000 ? true : undefined;
    });
  });

  it(`a flood over ${FLOOD_KEYS.toLocaleString("en-US")} keys, 3 requests of cost 10 each on bursts of 20, ${FLOOD_IN_FLIGHT} in flight, a gateway frozen every 500 ms: exactly ${(2 * FLOOD_KEYS).toLocaleString("en-US")} admitted, none without Redis, and the frozen gateways waited for Redis instead`, async () => {
    const before = await fleetCounters();
    const total = FLOOD_KEYS * 3;
    let next = 0;
    let admitted = 0;
    let rejected = 0;
    const others: number[] = [];
    // Request j is key j % K's (j / K)-th, so each key's three requests go to three gateways at
    // different moments of the flood.
    const worker = async () => {
      for (let j = next++; j < total; j = next++) {
        const key = j % FLOOD_KEYS;
        const round = Math.floor(j / FLOOD_KEYS);
        const reply = await sendRequest(
          agent,
          gatewayAt(key + round),
          `/v1/reports/r${key}`,
          as(`busy-flood-${key}`),
        );
        if (reply.status === 200) admitted++;
        else if (reply.status === 429) rejected++;
        else others.push(reply.status);
      }
    };
    let isFlooding = true;
    let freezes = 0;
    const freezer = (async () => {
      while (isFlooding) {
        await new Promise((resolve) => setTimeout(resolve, 500 - FREEZE_MS));
        if (!isFlooding) break;
        await freeze(gatewayAt(freezes++));
      }
    })();
    await Promise.all(Array.from({ length: FLOOD_IN_FLIGHT }, worker));
    isFlooding = false;
    await freezer;

    expect(others).toEqual([]);
    expect(admitted).toBe(2 * FLOOD_KEYS);
    expect(rejected).toBe(FLOOD_KEYS);
    const after = await fleetCounters();
    expect(after.withoutStore).toEqual({ "store-error": 0, timeout: 0, "circuit-open": 0 });
    expect(after.fallback).toBe(0);
    // Decisions were in flight while gateways were frozen: they came late and were waited for.
    expect(freezes).toBeGreaterThan(0);
    const slowDuringFlood =
      after.slow.reduce((sum, count) => sum + count, 0) -
      before.slow.reduce((sum, count) => sum + count, 0);
    expect(slowDuringFlood).toBeGreaterThan(0);
  });
});
