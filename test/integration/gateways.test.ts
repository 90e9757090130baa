/**
 * Three demo gateway processes sharing the run's Redis, over HTTP: the seed's worked example, a
 * malformed snapshot refused everywhere, and a dry-run limit compared with the same limit enforced.
 * Each test publishes the next policy version it needs; the gateways stay up for the file.
 */
import { Agent } from "node:http";
import type { TPolicyDocumentInput } from "@limitplane/enforcer/policy";
import {
  checkRateLimitContract,
  publishTestSnapshot,
  tokenBucket,
} from "@limitplane/enforcer/testing";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import {
  filePrefix,
  type GatewayProcess,
  health,
  promSample,
  type Reply,
  sendRequest,
  startGateways,
  waitFor,
  waitForVersion,
} from "./helpers/gateway-processes";
import { flipMiddleByte, publishWhole, snapshotVersion } from "./helpers/snapshots";

const prefix = filePrefix("gw");
let redis: Redis;
let gateways: GatewayProcess[] = [];
let nextVersion = 1;
const agent = new Agent({ keepAlive: true, maxSockets: 16 });

/** One request over this file's kept-alive connections (so 25 can leave at once). */
function send(
  gateway: GatewayProcess,
  path: string,
  headers: Record<string, string> = {},
  method = "GET",
): Promise<Reply> {
  return sendRequest(agent, gateway, path, headers, method);
}

const as = (customerId: string, tier: string) => ({
  authorization: `Bearer ${customerId}`,
  "x-tier": tier,
});

function gatewayAt(index: number): GatewayProcess {
  const gateway = gateways[index % gateways.length];
  if (gateway === undefined) throw new Error("no gateways");
  return gateway;
}

async function publish(edit?: (input: TPolicyDocumentInput) => void): Promise<number> {
  const version = nextVersion++;
  await publishTestSnapshot(redis, prefix, snapshotVersion(version, edit));
  await waitForVersion(gateways, version);
  return version;
}

/**
 * `count` simultaneous requests for one customer, spread over the gateways, and how long Redis's
 * clock says they took (an upper bound on the span between the first and the last decision).
 */
async function burst(
  count: number,
  customerId: string,
  tier: string,
): Promise<{ replies: Reply[]; spanMs: number }> {
  const startedMs = await redisNowMs();
  const replies = await Promise.all(
    Array.from({ length: count }, (_, i) => send(gatewayAt(i), "/v1/things", as(customerId, tier))),
  );
  return { replies, spanMs: (await redisNowMs()) - startedMs };
}

/** Redis's own clock, in ms. */
async function redisNowMs(): Promise<number> {
  const [seconds, micros] = await redis.time();
  return Number(seconds) * 1000 + Number(micros) / 1000;
}

beforeAll(async () => {
  redis = new Redis(inject("redisUrl"));
  await publishTestSnapshot(redis, prefix, snapshotVersion(nextVersion++));
  gateways = await startGateways(3, { prefix, id: "gw", args: ["--expected-gateways", "3"] });
});

afterAll(async () => {
  agent.destroy();
  await Promise.all(gateways.map((gateway) => gateway.stop()));
  redis.disconnect();
});

describe("three gateways, one shared limit", () => {
  it("the worked example: 25 at once admit exactly 20 (plus at most what refilled while Redis decided), and the 5 rejections carry the contract", async () => {
    // Warm every gateway and open the connections the burst will use, on another customer.
    await Promise.all(
      Array.from({ length: 27 }, (_, i) =>
        send(gatewayAt(i), "/v1/things", as("warmup", "enterprise")),
      ),
    );
    const { replies, spanMs } = await burst(25, "api-key-1", "free");
    const admitted = replies.filter((reply) => reply.status === 200).length;
    const rejected = replies.filter((reply) => reply.status === 429);
    expect(admitted + rejected.length).toBe(25);
    // Bursts of 20 at 10 per second: 20, plus one per 100 ms that Redis's clock saw pass.
    expect(admitted).toBeGreaterThanOrEqual(20);
    expect(admitted).toBeLessThanOrEqual(20 + Math.floor((spanMs * 10) / 1000));
    if (spanMs < 100) expect(admitted).toBe(20);

    for (const reply of rejected) {
      expect(reply.headers).toMatchObject({
        "content-type": "application/problem+json",
        "retry-after": "1",
        "ratelimit-policy": '"tier:free";q=20;w=2, "ceiling";q=10000;w=5',
        ratelimit: '"tier:free";r=0;t=1',
        "x-ratelimit-limit": "20",
        "x-ratelimit-remaining": "0",
      });
      const { problem } = checkRateLimitContract({
        status: reply.status,
        header: (name) => reply.headers[name],
        bodyText: reply.body,
      });
      const body = problem as { scope: string; retryAfterMs: number };
      expect(body).toMatchObject({
        type: "https://iana.org/assignments/http-problem-types#quota-exceeded",
        "violated-policies": ["tier:free"],
        code: "RATE_LIMITED",
        scope: "tier:free",
      });
      expect(body.retryAfterMs).toBeGreaterThan(0);
      expect(body.retryAfterMs).toBeLessThanOrEqual(100);
    }
  });

  it("a malformed snapshot is refused by every gateway, which keep enforcing the last good version and report the error", async () => {
    const good = await publish();
    // The next version, damaged in one byte after it was encoded: its digest gives it away.
    const next = snapshotVersion(nextVersion++);
    await publishWhole(redis, prefix, next, { damage: flipMiddleByte });

    const reports = await waitFor("every gateway to refuse it", async () => {
      const all = await Promise.all(gateways.map(health));
      return all.every((report) => report.snapshotErrors.count === 1) ? all : undefined;
    });
    for (const report of reports) {
      expect(report.policy?.version).toBe(good);
      expect(report.snapshotErrors.lastVersion).toBe(next.version);
      expect(report.snapshotErrors.lastMessage).toMatch(/SHA-256 of the bytes does not match/);
    }
    for (const gateway of gateways) {
      const metrics = await (await fetch(`${gateway.url}/metrics`)).text();
      expect(promSample(metrics, "limitplane_policy_snapshot_errors_total", {})).toBe(1);
      expect(gateway.stderr()).toMatch(/policy snapshot refused; keeping the last good one/);
      // Reported to the console with the next heartbeat.
      const heartbeat = await waitFor("the heartbeat to report it", async () => {
        const hash = await redis.hgetall(`${prefix}enforcer:${gateway.id}`);
        return hash.snapshotErrors === "1" ? hash : undefined;
      });
      expect(heartbeat).toMatchObject({ version: String(good), snapshotErrors: "1" });
    }
    // Still the last good limit: bursts of 20, not 2000.
    const { replies, spanMs } = await burst(30, "api-key-2", "free");
    expect(replies.filter((reply) => reply.status === 200).length).toBeLessThanOrEqual(
      20 + Math.floor((spanMs * 10) / 1000),
    );
    expect(replies.find((reply) => reply.status === 429)?.headers["ratelimit-policy"]).toMatch(
      /"tier:free";q=20;/,
    );
  });

  it("a stricter dry-run limit never rejects, and would-rejects exactly what the same limit enforced rejects on the same traffic", async () => {
    // 30 simultaneous requests over the three gateways, to a customer on a roomy tier, first with
    // a 10-request candidate in dry-run next to the tier, then with that limit enforced instead.
    // The candidate refills one request per 1000 s: nothing comes back during the test. (10: the
    // policy refuses a limit that cannot hold one request of its costliest class, reports.)
    const strict = tokenBucket(10, 0.001);
    await publish((input) => {
      input.tiers.push({ name: "roomy", displayName: "Roomy", limit: tokenBucket(1000, 100) });
      input.dryRunCandidates = [{ id: "strict", target: "tier:roomy", limit: strict }];
    });
    const { replies: dryRun } = await burst(30, "dry-run-customer", "roomy");
    expect(dryRun.map((reply) => reply.status)).toEqual(Array(30).fill(200));
    const wouldReject = await waitFor("the would-reject count", async () => {
      const texts = await Promise.all(
        gateways.map(async (gateway) => (await fetch(`${gateway.url}/metrics`)).text()),
      );
      const count = (outcome: string) =>
        texts.reduce(
          (sum, text) =>
            sum +
            promSample(text, "limitplane_decisions_total", {
              scope: "candidate:strict",
              outcome,
            }),
          0,
        );
      return count("allowed") + count("would_reject") === 30 ? count("would_reject") : undefined;
    });

    await publish((input) => {
      input.tiers.push({ name: "roomy", displayName: "Roomy", limit: strict });
    });
    const { replies: enforced } = await burst(30, "enforced-customer", "roomy");
    const rejected = enforced.filter((reply) => reply.status === 429).length;
    expect(rejected).toBe(20);
    expect(wouldReject).toBe(rejected);
  });
});
