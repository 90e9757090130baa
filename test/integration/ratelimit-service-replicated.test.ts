/**
 * A descriptor rule with `durability: "replicated"` in the rate-limit service, over gRPC as Envoy
 * calls it, on a Redis behind Sentinel of this test's own (one primary, two replicas, three
 * sentinels on free ports, `down-after-milliseconds` 3000; the shared Redis is never touched).
 * The service is the real process (`scripts/ratelimit-service.ts`, leases on, as it runs by
 * default) configured by REDIS_SENTINELS.
 *
 * The rule fails closed, so a decision the service could not make answers gRPC UNAVAILABLE (the
 * gateway's `failure_mode_deny` decides, docs/ratelimit-service.md), never OK. Asserted:
 * 1. Hammered with more than its limit, the rule answers OK at most its limit.
 * 2. The WAIT happens: with both replicas frozen (SIGSTOP), a replicated descriptor answers
 *    UNAVAILABLE while a rule without the option, on the same primary, still answers OK; once they
 *    resume, the replicated descriptor answers OK again.
 * 3. A failover that loses writes, under steady traffic on one descriptor of each rule: both
 *    replicas are frozen and their links cut (`CLIENT KILL TYPE replica`), so what the primary
 *    decides from then on never reaches them; once the rule without the option has been admitted
 *    after the cut, the primary is killed with SIGKILL and the replicas thawed; one is promoted.
 *    Every call is answered (OK, OVER_LIMIT or UNAVAILABLE, nothing else), decisions resume after
 *    the promotion (an OK after the kill), and over the whole run the replicated descriptor is
 *    admitted at most its limit: the promoted replica held every admission, so its count went on
 *    where it was. The descriptor without the option is admitted more than its limit: what the
 *    primary admitted after the cut was lost, and admitted again.
 */
import * as grpc from "@grpc/grpc-js";
import {
  compileSnapshot,
  parsePolicyDocument,
  type TDescriptorRuleInput,
} from "@limitplane/enforcer/policy";
import { createRedisClient, type RedisClient } from "@limitplane/enforcer/publication";
import { examplePolicyInput, publishTestSnapshot } from "@limitplane/enforcer/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { filePrefix, waitFor } from "./helpers/gateway-processes";
import {
  type RlsClient,
  rlsClient,
  type ServiceProcess,
  startService,
  waitForReady,
} from "./helpers/ratelimit-service-processes";
import { SentinelGroup } from "./helpers/sentinel-group";

const prefix = filePrefix("rr");
const LIMIT = 300;
/** Nothing refills during the test (a token a day). */
const BUCKET = { algorithm: "token-bucket", capacity: LIMIT, refillPerSec: 1 / 86_400 } as const;
const RULES: TDescriptorRuleInput[] = [
  {
    id: "vault-replicated",
    domain: "vault",
    descriptor: [{ key: "account" }],
    limit: BUCKET,
    onStoreFailure: "closed",
    durability: "replicated",
  },
  {
    id: "vault-async",
    domain: "vault",
    descriptor: [{ key: "plain" }],
    limit: BUCKET,
    onStoreFailure: "closed",
  },
];
/** Between two calls of one lane of steady traffic: the limit lasts past the kill. */
const PACE_MS = 50;
/**
 * After an UNAVAILABLE answer, as a client backing off would. Each call the service passes to
 * Redis spends the service's flood guard (twice the limit, in process), failed ones included: a
 * lane hammering through the gap would be refused by it after the failover, before Redis is
 * asked (docs/failover.md).
 */
const BACKOFF_MS = 500;

let group: SentinelGroup;
let control: RedisClient;
let service: ServiceProcess;
let client: RlsClient;
const frozen: number[] = [];

type Answer = "OK" | "OVER_LIMIT" | "UNAVAILABLE";

/** One call for `key=value`: its overall code, or UNAVAILABLE when the service refused it so. */
async function ask(key: string, value: string): Promise<Answer> {
  try {
    const reply = await client.shouldRateLimit({
      domain: "vault",
      hits_addend: 0,
      descriptors: [{ entries: [{ key, value }] }],
    });
    if (reply.overall_code === "OK" || reply.overall_code === "OVER_LIMIT") {
      return reply.overall_code;
    }
    throw new Error(`unexpected overall_code ${reply.overall_code}`);
  } catch (error: unknown) {
    if ((error as Partial<grpc.ServiceError>).code === grpc.status.UNAVAILABLE) {
      return "UNAVAILABLE";
    }
    throw error;
  }
}

function count(answers: readonly Answer[], answer: Answer): number {
  return answers.filter((candidate) => candidate === answer).length;
}

const LANES = 2;

/**
 * {@link LANES} lanes calling `key=through-failover` one call at a time, pausing
 * {@link PACE_MS} after an answer and {@link BACKOFF_MS} after UNAVAILABLE, until stopped.
 */
function steadyTraffic(key: string) {
  const answers: Answer[] = [];
  let killedAt: number | undefined;
  let isStopped = false;
  const lanes = Array.from({ length: LANES }, async () => {
    while (!isStopped) {
      const answer = await ask(key, "through-failover");
      answers.push(answer);
      const pauseMs = answer === "UNAVAILABLE" ? BACKOFF_MS : PACE_MS;
      await new Promise((resolve) => setTimeout(resolve, pauseMs));
    }
  });
  const afterKill = () => answers.slice(killedAt ?? answers.length);
  return {
    answers,
    /** Answers from now on count as after the kill. */
    markKill() {
      killedAt = answers.length;
    },
    afterKill,
    summary() {
      const later = afterKill();
      return (
        `${key}: ${count(answers, "OK")} OK in all; before the kill ${count(answers.slice(0, killedAt), "OK")} OK; ` +
        `after it ${count(later, "UNAVAILABLE")} UNAVAILABLE, ${count(later, "OK")} OK, ${count(later, "OVER_LIMIT")} OVER_LIMIT`
      );
    },
    async stop() {
      isStopped = true;
      await Promise.all(lanes);
    },
  };
}

beforeAll(async () => {
  group = await SentinelGroup.start({ downAfterMs: 3_000 });
  control = createRedisClient("control", {
    url: "redis://127.0.0.1/0",
    sentinel: { nodes: group.sentinelNodes, name: group.masterName },
  });
  const parsed = parsePolicyDocument({ ...examplePolicyInput(), descriptorRules: RULES });
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors.slice(0, 3)));
  await publishTestSnapshot(
    control,
    prefix,
    compileSnapshot(parsed.value, { version: 1, compiledAt: new Date().toISOString() }),
  );
  service = await startService({
    prefix,
    id: "rls-replicated",
    env: {
      // The host and port are not used behind Sentinel; the scheme and database are.
      REDIS_URL: "redis://sentinel-managed/0",
      REDIS_SENTINELS: group.sentinelsText,
      REDIS_SENTINEL_NAME: group.masterName,
    },
  });
  await waitForReady(service);
  client = rlsClient(service.grpcAddress);
}, 180_000);

afterAll(async () => {
  for (const port of frozen) group?.resume(port);
  client?.close();
  await service?.stop();
  control?.disconnect();
  await group?.stop();
});

describe('a descriptor rule with durability "replicated" over gRPC, behind Sentinel', () => {
  it("honours the limit, waits for a replica, and keeps its count through a failover", async () => {
    // 1. More than the limit from four lanes at once.
    const hammered = (
      await Promise.all(
        Array.from({ length: 4 }, async () => {
          const answers: Answer[] = [];
          for (let i = 0; i < LIMIT / 4 + 10; i++) answers.push(await ask("account", "hammered"));
          return answers;
        }),
      )
    ).flat();
    expect(count(hammered, "OK")).toBeGreaterThan(0);
    expect(count(hammered, "OK")).toBeLessThanOrEqual(LIMIT);

    // 2. No replica acknowledges: the replicated rule fails closed; the other is still decided.
    const primary = await group.primaryPort();
    const replicas = group.replicaPorts(primary);
    expect(replicas).toHaveLength(2);
    for (const port of replicas) {
      group.pause(port);
      frozen.push(port);
    }
    expect(await ask("account", "unacknowledged")).toBe("UNAVAILABLE");
    expect(await ask("plain", "unacknowledged")).toBe("OK");
    for (const port of frozen.splice(0)) group.resume(port);
    await waitFor(
      "a replica to acknowledge again",
      async () => ((await ask("account", "acknowledged")) === "OK" ? true : undefined),
      { timeoutMs: 60_000, intervalMs: 100 },
    );

    // 3. Steady traffic on one descriptor of each rule, two lanes each; the primary dies under it.
    const replicatedRun = steadyTraffic("account");
    const asyncRun = steadyTraffic("plain");
    const runs = [replicatedRun, asyncRun];
    try {
      await waitFor("admissions on both rules", () =>
        runs.every((run) => count(run.answers, "OK") >= LIMIT / 5) ? true : undefined,
      );
      // The replicas stop taking the stream: frozen, and their links cut so that what follows
      // stays on the primary alone (a thawed replica would otherwise read it from its socket).
      for (const port of replicas) {
        group.pause(port);
        frozen.push(port);
      }
      expect(await group.cutReplicaLinks(primary)).toBe(replicas.length);
      // More admissions than calls in flight (one per lane) after the cut: at least one was
      // decided after it, and will be lost with the primary, unless a replica acknowledged it.
      const asyncAtCut = count(asyncRun.answers, "OK");
      await waitFor("admissions of the rule without WAIT after the cut", () =>
        count(asyncRun.answers, "OK") > asyncAtCut + LANES ? true : undefined,
      );
      for (const run of runs) run.markKill();
      await group.kill(primary);
      for (const port of frozen.splice(0)) group.resume(port);
      // Decisions resume once a replica is promoted (and the other replica follows it, for
      // WAIT); then the lanes run on until each descriptor is spent.
      await waitFor(
        "both descriptors decided on the promoted replica until spent",
        () =>
          runs.every(
            (run) => count(run.afterKill(), "OK") > 0 && run.answers.at(-1) === "OVER_LIMIT",
          )
            ? true
            : undefined,
        { timeoutMs: 120_000, intervalMs: 50 },
      );
    } catch (error: unknown) {
      throw new Error(
        `${String(error)}; ${runs.map((run) => run.summary()).join("; ")}; service stderr: ${service.stderr().slice(-2_000)}`,
      );
    } finally {
      await Promise.all(runs.map((run) => run.stop()));
    }
    const promoted = await group.primaryPort();
    console.log(
      `descriptors through a Sentinel failover, limit ${LIMIT}: replicated ${replicatedRun.summary()}; ` +
        `without WAIT ${asyncRun.summary()}; primary ${primary} -> ${promoted}; ` +
        `hammered: ${count(hammered, "OK")} OK of ${hammered.length}`,
    );
    expect(promoted).not.toBe(primary);
    // The guarantee: the promoted replica held every admission, so the count went on from it.
    expect(count(replicatedRun.answers, "OK")).toBeLessThanOrEqual(LIMIT);
    expect(count(replicatedRun.afterKill(), "OK")).toBeGreaterThan(0);
    // Without WAIT the same failover lost admissions (the count went back): the scenario is one
    // that loses writes, so the line above is not true by luck.
    expect(count(asyncRun.answers, "OK")).toBeGreaterThan(LIMIT);
  }, 300_000);
});
