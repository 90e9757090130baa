/**
 * A Redis failover under traffic: one primary, two replicas and three sentinels of this test's own
 * (`SentinelGroup`; the shared Redis is never touched), two demo gateways configured by
 * REDIS_SENTINELS, a steady client that stays under its limits, anonymous sign-in probes, and one
 * tight key hammered from both gateways. The primary is killed with SIGKILL.
 *
 * What is measured and asserted (docs/failover.md states the bounds):
 * - every request is answered, none later than the fetch deadline (10 s, ten times the gateways'
 *   1 s `maxWaitMs`);
 * - during the gap each limit follows its failure policy: the enterprise tier fails open (every
 *   steady request admitted), sign-in and the tight tier fail closed (503 LIMITER_UNAVAILABLE,
 *   never an admission Redis did not make), and the decisions are counted as degraded;
 * - the gateways decide with Redis again by themselves once a replica is promoted, within
 *   RETURN_BOUND_MS of the sentinels' `+switch-master` (the design figure is 4 s: the 2 s reconnect
 *   backoff cap plus the breaker's 2 s cool-down; the assertion allows for a loaded machine);
 * - a policy version published while the primary is down reaches every gateway after it;
 * - the tight key's admissions over the whole run stay within the documented bound,
 *   `capacity + refillPerSec × run + overshoot`, where the overshoot bound is
 *   `capacity + refillPerSec × lag` and the lag is what `INFO replication` on the primary reported
 *   just before the kill (whole seconds, rounded up by one, plus the time from that read to the
 *   kill);
 * - a key of a tier with `durability: "replicated"` (the same bucket, failing closed), hammered
 *   alongside, is never over its limit: admissions within `capacity + refillPerSec × run`, with
 *   no overshoot term.
 *
 * With FAILOVER_REPORT_FILE set, the measurements are appended to it as one JSON line
 * (`npm run test:failover -- --repeat N` reads them).
 */
import { appendFile } from "node:fs/promises";
import { Agent } from "node:http";
import {
  createRedisClient,
  type RedisClient,
  readEnforcerHeartbeats,
  readRedisFailovers,
} from "@limitplane/enforcer/publication";
import { publishTestSnapshot, tokenBucket } from "@limitplane/enforcer/testing";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  filePrefix,
  type GatewayProcess,
  type Reply,
  sendRequest,
  startGateways,
  waitFor,
  waitForVersion,
} from "./helpers/gateway-processes";
import { SentinelGroup } from "./helpers/sentinel-group";
import { snapshotVersion } from "./helpers/snapshots";

const prefix = filePrefix("fo");
/** The tight tier: a token bucket that fails closed, so every admission is Redis's. */
const TIGHT = { capacity: 10, refillPerSec: 10 } as const;
const FETCH_DEADLINE_MS = 10_000;
const RETURN_BOUND_MS = 20_000;

let group: SentinelGroup;
let control: RedisClient;
let gateways: GatewayProcess[] = [];
const agent = new Agent({ keepAlive: true, maxSockets: 64 });

const enterprise = { authorization: "Bearer acme", "x-tier": "enterprise" };
const hammer = { authorization: "Bearer hammer", "x-tier": "tight" };
const vault = { authorization: "Bearer vault", "x-tier": "vault" };

function policy(version: number) {
  return snapshotVersion(version, (input) => {
    input.tiers.push({
      name: "tight",
      displayName: "Tight",
      limit: { ...tokenBucket(TIGHT.capacity, TIGHT.refillPerSec), onStoreFailure: "closed" },
    });
    input.tiers.push({
      name: "vault",
      displayName: "Vault",
      limit: {
        ...tokenBucket(TIGHT.capacity, TIGHT.refillPerSec),
        onStoreFailure: "closed",
        durability: "replicated",
      },
    });
    input.customers = [
      ...(input.customers ?? []),
      { id: "hammer", displayName: "Hammer", tier: "tight" },
      { id: "vault", displayName: "Vault", tier: "vault" },
      // What version 2 changes, as an incident raised during the failover would: a customer.
      ...(version >= 2 ? [{ id: "incident", displayName: "Incident", tier: "pro" }] : []),
    ];
  });
}

interface Answer {
  readonly atMs: number;
  readonly gateway: number;
  readonly status: number | string;
  readonly code?: string;
}

/** One request with a deadline; an error or a missed deadline is recorded, never thrown. */
async function ask(
  at: number,
  path: string,
  headers: Record<string, string>,
  method = "GET",
): Promise<Answer> {
  const gateway = gateways[at];
  if (gateway === undefined) throw new Error(`no gateway ${at}`);
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<string>((resolve) => {
    timer = setTimeout(() => resolve("no answer within the deadline"), FETCH_DEADLINE_MS);
  });
  try {
    const reply: Reply | string = await Promise.race([
      sendRequest(agent, gateway, path, headers, method),
      deadline,
    ]);
    if (typeof reply === "string") return { atMs: performance.now(), gateway: at, status: reply };
    const code =
      reply.status === 503 ? (JSON.parse(reply.body) as { code?: string }).code : undefined;
    return { atMs: performance.now(), gateway: at, status: reply.status, code };
  } catch (error: unknown) {
    return { atMs: performance.now(), gateway: at, status: String(error) };
  } finally {
    clearTimeout(timer);
  }
}

/** Runs `send` in `lanes` loops until stopped, each waiting `pauseMs` between its requests. */
function traffic(
  lanes: number,
  pauseMs: number,
  send: (lane: number, n: number) => Promise<Answer>,
) {
  const answers: Answer[] = [];
  let isRunning = true;
  const loops = Array.from({ length: lanes }, async (_, lane) => {
    for (let n = 0; isRunning; n++) {
      answers.push(await send(lane, n));
      if (pauseMs > 0) await new Promise((resolve) => setTimeout(resolve, pauseMs));
    }
  });
  return {
    answers,
    async stop() {
      isRunning = false;
      await Promise.all(loops);
    },
  };
}

let nextAddress = 1;
/** An anonymous sign-in from an address of its own: a quiet subject, so Redis decides it. */
function signIn(at: number): Promise<Answer> {
  const address = nextAddress++;
  return ask(
    at,
    "/v1/auth/sign-in",
    { "x-forwarded-for": `198.18.${Math.floor(address / 250) % 250}.${(address % 250) + 1}` },
    "POST",
  );
}

beforeAll(async () => {
  group = await SentinelGroup.start({ downAfterMs: 3_000 });
  control = createRedisClient("control", {
    url: "redis://127.0.0.1/0",
    sentinel: { nodes: group.sentinelNodes, name: group.masterName },
  });
  await publishTestSnapshot(control, prefix, policy(1));
  gateways = await startGateways(2, {
    prefix,
    id: "fo",
    args: ["--expected-gateways", "2", "--trust-proxy", "1"],
    env: {
      // The host and port are not used behind Sentinel; the scheme and database are.
      REDIS_URL: "redis://sentinel-managed/0",
      REDIS_SENTINELS: group.sentinelsText,
      REDIS_SENTINEL_NAME: group.masterName,
    },
  });
  await waitForVersion(gateways, 1);
}, 180_000);

afterAll(async () => {
  await Promise.all(gateways.map((gateway) => gateway.stop()));
  control?.disconnect();
  agent.destroy();
  await group?.stop();
});

describe("a Sentinel failover under traffic", () => {
  it("answers every request, follows each failure policy in the gap, returns to Redis by itself and stays within the overshoot bound", async () => {
    const startedMs = performance.now();
    const steady = traffic(1, 10, (_, n) => ask(n % 2, "/v1/things", enterprise));
    const tight = traffic(4, 0, (lane) => ask(lane % 2, "/v1/things", hammer));
    const durable = traffic(2, 0, (lane) => ask(lane % 2, "/v1/things", vault));
    const probes = traffic(2, 100, (lane) => signIn(lane));

    // Before the kill: the tight key is limited by Redis (admissions and rejections both seen).
    await waitFor("the tight key to be limited", () =>
      tight.answers.some((answer) => answer.status === 429) &&
      tight.answers.filter((answer) => answer.status === 200).length > TIGHT.capacity
        ? true
        : undefined,
    );

    const sentinelEvents = new Redis({ port: group.sentinelNodes[0]?.port, host: "127.0.0.1" });
    sentinelEvents.on("error", () => {});
    let switchedAtMs: number | null = null;
    sentinelEvents.on("message", (channel: string) => {
      if (channel === "+switch-master") switchedAtMs ??= performance.now();
    });
    await sentinelEvents.subscribe("+switch-master");

    const oldPrimary = await group.primaryPort();
    const infoAtMs = performance.now();
    const replication = await group.replication(oldPrimary);
    // The moment the signal is sent: answers processed while the exit is awaited are after it.
    const killedAtMs = performance.now();
    await group.kill(oldPrimary);

    // A policy version published while no primary answers: retried until one does.
    const published = waitFor(
      "version 2 to be published",
      async () => {
        try {
          await publishTestSnapshot(control, prefix, policy(2));
          return true;
        } catch (error: unknown) {
          // Published by an attempt whose reply was lost.
          if (String(error).includes("Redis has 2")) return true;
          throw error;
        }
      },
      { timeoutMs: 60_000, intervalMs: 200 },
    );

    const switchedMs = await waitFor(
      "a sentinel to promote a replica",
      () => switchedAtMs ?? undefined,
      {
        timeoutMs: 60_000,
        intervalMs: 20,
      },
    );
    const newPrimary = await group.primaryPort();
    expect(newPrimary).not.toBe(oldPrimary);

    // Back to Redis: a quiet sign-in subject admitted again (only Redis admits it: it fails closed).
    const backAtMs = await Promise.all(
      gateways.map((_, at) =>
        waitFor(
          `gateway ${at} to decide with Redis again`,
          () =>
            probes.answers.find(
              (answer) =>
                answer.gateway === at && answer.atMs > switchedMs && answer.status === 200,
            )?.atMs,
          { timeoutMs: RETURN_BOUND_MS + 5_000, intervalMs: 20 },
        ),
      ),
    );
    await published;
    await waitForVersion(gateways, 2, 30_000);
    // A little traffic on the new primary, so the run covers decisions after the return.
    const afterReturn = tight.answers.length;
    await waitFor("the tight key to be decided on the new primary", () =>
      tight.answers.slice(afterReturn).some((answer) => answer.status === 429) ? true : undefined,
    );
    await Promise.all([steady.stop(), tight.stop(), durable.stop(), probes.stop()]);
    const endedMs = performance.now();
    sentinelEvents.disconnect();

    // What the console shows: every gateway reports the new primary (and Sentinel's name), and
    // the change is recorded as a failover to mark on the charts.
    const promotedAddress = `127.0.0.1:${newPrimary}`;
    await waitFor("the gateways to report the new primary", async () => {
      const { heartbeats } = await readEnforcerHeartbeats(control, prefix, 10);
      return heartbeats.length === 2 &&
        heartbeats.every(
          (heartbeat) =>
            heartbeat.redisTopology?.mode === "sentinel" &&
            heartbeat.redisTopology.sentinelName === group.masterName &&
            heartbeat.redisTopology.primaries.join() === promotedAddress,
        )
        ? true
        : undefined;
    });
    const failovers = await readRedisFailovers(control, prefix, Date.now() - 600_000);
    expect(failovers.map((event) => [event.from, event.to])).toEqual([
      [`127.0.0.1:${oldPrimary}`, promotedAddress],
    ]);

    const all = [...steady.answers, ...tight.answers, ...durable.answers, ...probes.answers];
    // Every request answered with a status: no connection error, nothing past the deadline.
    expect(all.filter((answer) => typeof answer.status === "string")).toEqual([]);

    // Fails open: the steady client is admitted throughout, gap included.
    expect(steady.answers.filter((answer) => answer.status !== 200)).toEqual([]);
    // Fails closed: in the gap sign-in and the tight key are refused as unavailable, never
    // admitted by a fallback; outside it they are Redis's 200 or 429.
    const inGap = (answer: Answer) =>
      answer.atMs > killedAtMs && answer.atMs < (backAtMs[answer.gateway] ?? endedMs);
    for (const answer of [...tight.answers, ...durable.answers, ...probes.answers]) {
      expect([200, 429, 503]).toContain(answer.status);
      if (answer.status === 503) expect(answer.code).toBe("LIMITER_UNAVAILABLE");
    }
    expect(
      probes.answers.filter((answer) => inGap(answer) && answer.status === 503).length,
    ).toBeGreaterThan(0);
    expect(
      probes.answers.filter((answer) => answer.atMs < killedAtMs && answer.status !== 200),
    ).toEqual([]);
    let degraded = 0;
    for (const gateway of gateways) {
      const text = await (await fetch(`${gateway.url}/metrics`)).text();
      for (const line of text.split("\n")) {
        if (line.startsWith("limitplane_degraded_decisions_total{")) {
          degraded += Number(line.slice(line.lastIndexOf(" ") + 1));
        }
      }
    }
    expect(degraded).toBeGreaterThan(0);

    // Back by themselves, within the stated bound after the promotion.
    const returnAfterSwitchMs = backAtMs.map((atMs) => Math.max(0, atMs - switchedMs));
    for (const ms of returnAfterSwitchMs) expect(ms).toBeLessThan(RETURN_BOUND_MS);

    // The tight key: admissions over the whole run within capacity + rate × run + overshoot,
    // the overshoot bound computed from the lag INFO replication reported before the kill.
    const admitted = tight.answers.filter((answer) => answer.status === 200).length;
    const runSec = (endedMs - startedMs) / 1_000;
    const lagSec =
      Math.max(0, ...replication.replicas.map((replica) => replica.lagSec)) +
      1 +
      (killedAtMs - infoAtMs) / 1_000;
    const allowance = TIGHT.capacity + TIGHT.refillPerSec * runSec;
    const overshootBound = TIGHT.capacity + TIGHT.refillPerSec * lagSec;
    expect(replication.replicas).toHaveLength(2);
    expect(admitted).toBeLessThanOrEqual(allowance + overshootBound);
    // Replicated: never over its limit, failover or not.
    const durableAdmitted = durable.answers.filter((answer) => answer.status === 200).length;
    expect(durable.answers.some((answer) => answer.status === 429)).toBe(true);
    expect(durableAdmitted).toBeLessThanOrEqual(allowance);

    const report = {
      kind: "sentinel",
      gapMs: backAtMs.map((atMs) => Math.round(atMs - killedAtMs)),
      promotionMs: Math.round(switchedMs - killedAtMs),
      returnAfterSwitchMs: returnAfterSwitchMs.map(Math.round),
      replicationLagSec: replication.replicas.map((replica) => replica.lagSec),
      replicaOffsetBehindBytes: replication.replicas.map(
        (replica) => replication.primaryOffset - replica.offset,
      ),
      tightAdmitted: admitted,
      tightAllowance: Math.floor(allowance),
      overshoot: Math.round((admitted - allowance) * 10) / 10,
      overshootBound: Math.round(overshootBound * 10) / 10,
      replicatedOvershoot: Math.round((durableAdmitted - allowance) * 10) / 10,
      requests: all.length,
      degraded,
    };
    console.log(`failover: ${JSON.stringify(report)}`);
    const reportFile = process.env.FAILOVER_REPORT_FILE;
    if (reportFile !== undefined && reportFile !== "") {
      await appendFile(reportFile, `${JSON.stringify(report)}\n`);
    }
  }, 180_000);
});
