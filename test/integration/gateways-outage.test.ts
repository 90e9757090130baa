/**
 * Redis stopped under traffic: three demo gateways on a redis-server of this test's own (the shared
 * one is never touched), killed and restarted, then hung (SIGSTOP) and resumed, while a steady
 * stream of requests keeps coming. Every request gets an answer; each failure policy does what it
 * declares; degraded decisions are counted; enforcement comes back by itself.
 *
 * The policy: tiers fail open (the default for paying customers), anonymous sign-in fails
 * closed, and the per-address ceiling falls back to a local share: 30 requests (refilling one per
 * 1000 s, so nothing comes back during the test) divided among 3 gateways is 10 each. (Sign-in
 * attempts see the per-address ceiling too, under their own subject, address and route.)
 */

import { readEnforcerHeartbeats } from "@limitplane/enforcer/publication";
import {
  checkFetchResponseContract,
  publishTestSnapshot,
  tokenBucket,
} from "@limitplane/enforcer/testing";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  filePrefix,
  type GatewayProcess,
  type PrivateRedis,
  privateRedis,
  promSample,
  startGateways,
  waitFor,
  waitForVersion,
} from "./helpers/gateway-processes";
import { snapshotVersion } from "./helpers/snapshots";

const prefix = filePrefix("ou");
let redis: PrivateRedis;
let gateways: GatewayProcess[] = [];

/** An enterprise customer: its tier limit (bursts of 5000) never binds on the steady stream. */
const customer = { authorization: "Bearer acme", "x-tier": "enterprise" };

function gateway(index: number): GatewayProcess {
  const found = gateways[index];
  if (found === undefined) throw new Error("no gateway");
  return found;
}

let nextAddress = 1;

/**
 * One anonymous sign-in attempt, from an address of its own (the gateways trust one proxy hop):
 * the test polls sign-in while waiting for Redis, and many attempts from one address would trip
 * that address's own limits (the flood guard counts every arrival), which is not what is tested.
 */
async function signIn(at: GatewayProcess): Promise<Response> {
  const address = nextAddress++;
  return fetch(`${at.url}/v1/auth/sign-in`, {
    method: "POST",
    headers: {
      "x-forwarded-for": `198.51.${Math.floor(address / 250) % 250}.${(address % 250) + 1}`,
    },
  });
}

async function metricsOf(at: GatewayProcess): Promise<string> {
  return (await fetch(`${at.url}/metrics`)).text();
}

/** Requests every 5 ms, round-robin, until stopped; records how each was answered. */
function steadyTraffic() {
  const answers: (number | string)[] = [];
  let isRunning = true;
  let index = 0;
  const loop = (async () => {
    while (isRunning) {
      const at = gateways[index++ % gateways.length];
      if (at === undefined) break;
      try {
        const response = await fetch(`${at.url}/v1/things`, { headers: customer });
        await response.arrayBuffer();
        answers.push(response.status);
      } catch (error: unknown) {
        answers.push(String(error));
      }
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  })();
  return {
    answers,
    async stop() {
      isRunning = false;
      await loop;
    },
  };
}

beforeAll(async () => {
  redis = await privateRedis();
  const client = new Redis(redis.url);
  await publishTestSnapshot(
    client,
    prefix,
    snapshotVersion(1, (input) => {
      input.ceilings.perAddress = tokenBucket(30, 0.001);
    }),
  );
  client.disconnect();
  gateways = await startGateways(3, {
    prefix,
    redisUrl: redis.url,
    id: "ou",
    args: ["--expected-gateways", "3", "--trust-proxy", "1"],
  });
  await waitForVersion(gateways, 1);
});

afterAll(async () => {
  await Promise.all(gateways.map((at) => at.stop()));
  await redis.stop();
});

describe("Redis stopped under traffic", () => {
  it("answers every request, applies each failure policy, counts degraded decisions, and recovers by itself", async () => {
    const traffic = steadyTraffic();
    expect((await signIn(gateway(0))).status).toBe(200);

    await redis.stop();

    // closed: anonymous sign-in is refused while the store is unreachable.
    const refused = await waitFor("sign-in to fail closed", async () => {
      const response = await signIn(gateway(0));
      return response.status === 503 ? response : undefined;
    });
    const contract = await checkFetchResponseContract(refused);
    expect(contract.retryAfterSec).toBeGreaterThanOrEqual(1);
    expect(contract.policies.has("address/endpoint:sign-in")).toBe(true);
    expect(contract.problem).toMatchObject({
      type: "https://iana.org/assignments/http-problem-types#temporary-reduced-capacity",
      code: "LIMITER_UNAVAILABLE",
      scope: "address/endpoint:sign-in",
    });

    // open: the customer is admitted, unmeasured.
    const admitted = await fetch(`${gateway(1).url}/v1/things`, { headers: customer });
    expect(admitted.status).toBe(200);

    // local: this gateway's share of the per-address ceiling, 30 / 3 = 10 anonymous requests.
    const anonymous = [];
    for (let i = 0; i < 12; i++) {
      const response = await fetch(`${gateway(2).url}/v1/things`);
      anonymous.push({ status: response.status, body: await response.text() });
    }
    expect(anonymous.map((reply) => reply.status)).toEqual([...Array(10).fill(200), 429, 429]);
    expect(JSON.parse(anonymous[10]?.body ?? "{}")).toMatchObject({ scope: "address" });

    const during = await metricsOf(gateway(2));
    expect(promSample(during, "limitplane_degraded_decisions_total", { scope: "address" })).toBe(
      12,
    );
    expect(
      promSample(during, "limitplane_decision_sources_total", { source: "fallback" }),
    ).toBeGreaterThanOrEqual(12);
    const failures = (text: string, failure: string) =>
      promSample(text, "limitplane_store_failures_total", { failure });
    expect(failures(during, "store-error") + failures(during, "circuit-open")).toBeGreaterThan(0);

    await redis.start();
    // Recovery needs no restart: each gateway's client reconnects, its breaker's probe succeeds,
    // and the shared store decides again (sign-in admitted, from a fresh bucket in the empty
    // Redis; while a breaker is still open, sign-in is refused without consuming anything).
    for (const at of gateways) {
      await waitFor(
        `${at.id} to decide sign-in with the store again`,
        async () => ((await signIn(at)).status === 200 ? true : undefined),
        { timeoutMs: 30_000 },
      );
    }

    // A hung Redis (the process frozen, connections open): calls time out, the breaker opens.
    redis.pause();
    try {
      await waitFor("sign-in to fail closed on a hung Redis", async () => {
        const response = await signIn(gateway(1));
        return response.status === 503 ? true : undefined;
      });
      expect(failures(await metricsOf(gateway(1)), "timeout")).toBeGreaterThan(0);
    } finally {
      redis.resume();
    }
    await waitFor(
      "sign-in to recover after the hang",
      async () => {
        const response = await signIn(gateway(1));
        return response.status === 200 ? true : undefined;
      },
      { timeoutMs: 30_000 },
    );

    // What the gateways decided without Redis reaches the console with their heartbeats, by why.
    const reporter = new Redis(redis.url);
    try {
      // At least the 12 anonymous requests above, while Redis was stopped (refused or breaker).
      await waitFor("a heartbeat reporting decisions made without Redis", async () => {
        const { heartbeats } = await readEnforcerHeartbeats(reporter, prefix, 10);
        const beat = heartbeats.find((candidate) => candidate.id === gateway(2).id);
        const counts = beat?.decisionsWithoutStore;
        return counts !== undefined && counts.storeError + counts.circuitOpen >= 12
          ? beat
          : undefined;
      });
    } finally {
      reporter.disconnect();
    }

    await traffic.stop();
    // Every request of the steady stream was answered, and none was refused: tiers fail open.
    expect(traffic.answers.length).toBeGreaterThan(0);
    expect(traffic.answers.filter((answer) => answer !== 200)).toEqual([]);
    for (const at of gateways) {
      expect((await fetch(`${at.url}/healthz`)).status).toBe(200);
    }
  });
});
