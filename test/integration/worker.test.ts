import type { ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { once } from "node:events";
import { policyRedisNames } from "@limitplane/enforcer/publication";
import pg from "pg";
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from "vitest";
import { createCustomer } from "@/lib/control/customer/create-customer";
import type { ControlDeps } from "@/lib/control/deps";
import { createDescriptorRule } from "@/lib/control/descriptor-rule/create-descriptor-rule";
import { raiseDescriptorValue } from "@/lib/control/descriptor-rule/raise-descriptor-value";
import { recordDescriptorRaiseExpiries } from "@/lib/control/descriptor-rule/record-descriptor-raise-expiries";
import { raiseIncident } from "@/lib/control/incident/raise-incident";
import { createTier } from "@/lib/control/tier/create-tier";
import { systemClock } from "@/lib/server/composition";
import { createRedis } from "@/lib/server/redis";
import {
  publishSnapshotsJob,
  recordIncidentExpiriesJob,
  startWorker,
  type Worker,
  type WorkerJob,
} from "@/lib/worker";
import {
  depsFor,
  importExamplePolicy,
  operatorContext,
  uniqueName,
} from "./helpers/policy-fixtures";
import { provideTestDatabase } from "./helpers/test-database";
import { waitFor } from "./helpers/wait-for";
import { spawnWorkerProcess } from "./helpers/worker-process";

const database = provideTestDatabase();
const redis = createRedis("control", { url: inject("redisUrl") });
const workers: Worker[] = [];
const children: ChildProcess[] = [];

function testPrefix(): string {
  return `${inject("redisKeyPrefix")}${randomBytes(3).toString("hex")}:`;
}

/** A job that only counts its runs. */
function countingJob(): WorkerJob & { runs: number } {
  const job = {
    name: "count",
    runs: 0,
    async run() {
      job.runs++;
      return { nextRunInMs: 50 };
    },
  };
  return job;
}

function start(jobs: WorkerJob[], onElection?: (isWon: boolean) => void): Worker {
  const worker = startWorker({
    databaseUrl: database.current().url,
    jobs,
    leaderPollMs: 100,
    log: () => {},
    onElection,
  });
  workers.push(worker);
  return worker;
}

/** The expiry recorder job, two minutes ahead of the wall clock, and the ids it records. */
function startExpiryRecorder(db: ControlDeps["db"]) {
  const recorded: string[] = [];
  const worker = start([
    recordIncidentExpiriesJob({
      deps: depsFor(db, () => Date.now() + 120_000),
      intervalMs: 50,
      onRecorded: (ids) => recorded.push(...ids),
    }),
  ]);
  return { recorded, worker };
}

beforeAll(async () => {
  await importExamplePolicy(depsFor(database.current().db));
});

// Each test's workers stop before the next test, which needs the lead free.
afterEach(async () => {
  await Promise.all(workers.splice(0).map((worker) => worker.stop()));
});

afterAll(async () => {
  for (const child of children) if (child.exitCode === null) child.kill("SIGKILL");
  redis.disconnect();
});

describe("the worker", () => {
  it("of two copies one leads and runs the jobs; when it stops, the other takes over", async () => {
    const firstJob = countingJob();
    const secondJob = countingJob();
    const first = start([firstJob]);
    await first.whenLeading();
    const second = start([secondJob]);
    await waitFor(() => firstJob.runs >= 3, { what: "the leader's job to run" });
    expect(second.isLeader()).toBe(false);
    expect(secondJob.runs).toBe(0);

    await first.stop();
    expect(first.isLeader()).toBe(false);
    await second.whenLeading();
    await waitFor(() => secondJob.runs >= 1, { what: "the new leader's job to run" });
    await second.stop();
  });

  it("when the leader's session dies, a waiting worker takes over", async () => {
    // A leader that dies for good: a bare session holding the lead, then terminated.
    const leader = new pg.Client({ connectionString: database.current().url });
    await leader.connect();
    leader.on("error", () => {});
    await leader.query("SELECT pg_advisory_lock(19536, 3)");
    const { rows } = await leader.query<{ pid: number }>("SELECT pg_backend_pid() AS pid");
    const job = countingJob();
    let triesLost = 0;
    const follower = start([job], (isWon) => {
      if (!isWon) triesLost++;
    });
    // The election, driven: the follower has tried for the lead, and lost, several times.
    await waitFor(() => triesLost >= 3, { what: "the follower to try for the lead three times" });
    expect(follower.isLeader()).toBe(false);
    expect(job.runs).toBe(0);

    const admin = new pg.Client({ connectionString: database.current().url });
    await admin.connect();
    await admin.query("SELECT pg_terminate_backend($1)", [rows[0]?.pid]);
    await admin.end();
    await follower.whenLeading();
    await waitFor(() => job.runs >= 1, { what: "the new leader's job to run" });
  });

  it("a leader whose connection dies stops leading, reconnects and leads again", async () => {
    const lines: string[] = [];
    const job = countingJob();
    const worker = startWorker({
      databaseUrl: database.current().url,
      jobs: [job],
      leaderPollMs: 100,
      log: (line) => lines.push(line),
    });
    workers.push(worker);
    await worker.whenLeading();
    const admin = new pg.Client({ connectionString: database.current().url });
    await admin.connect();
    await admin.query(
      `SELECT pg_terminate_backend(pid) FROM pg_locks
       WHERE locktype = 'advisory' AND classid = 19536 AND objid = 3 AND granted
         AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
    );
    await admin.end();
    await waitFor(() => lines.filter((line) => line === "worker: leading").length === 2, {
      what: "the worker to lead again",
    });
    expect(lines).toEqual([
      "worker: leading",
      "worker: lost the lead (connection gone); reconnecting",
      "worker: leading",
    ]);
    const runs = job.runs;
    await waitFor(() => job.runs > runs, { what: "the job to run again" });
  });

  it("publishes a committed change within moments, woken by NOTIFY rather than its poll", async () => {
    const { db } = database.current();
    const prefix = testPrefix();
    const worker = start([
      publishSnapshotsJob({
        publisher: { db, redis, prefix, clock: systemClock },
        pollMs: 600_000,
      }),
    ]);
    await worker.whenLeading();
    const key = policyRedisNames(prefix).head;
    await waitFor(async () => (await redis.hget(key, "version")) !== null, {
      what: "the backlog to be published",
    });
    const { policyVersion } = await createTier(
      {
        name: uniqueName("notify"),
        limit: { algorithm: "token-bucket", capacity: 100, refillPerSec: 10 },
      },
      operatorContext(),
      depsFor(db),
    );
    await waitFor(async () => Number(await redis.hget(key, "version")) === policyVersion, {
      // Far below the 10-minute poll: only the notification can make this deadline.
      what: `version ${policyVersion} in Redis`,
      timeoutMs: 5_000,
    });
    await worker.stop();
  });

  it("records incident expiries with the system actor", async () => {
    const { db } = database.current();
    const deps: ControlDeps = depsFor(db);
    const customerId = uniqueName("expiring");
    await createCustomer(
      { id: customerId, displayName: "Expiring", tier: "pro" },
      operatorContext(),
      deps,
    );
    const { incident } = await raiseIncident(
      { customerId, factor: 2, durationMs: 60_000 },
      operatorContext(),
      deps,
    );
    const { recorded, worker } = startExpiryRecorder(db);
    await waitFor(() => recorded.includes(incident.id), { what: "the expiry to be recorded" });
    await worker.stop();
    const entry = await db.auditEntry.findFirstOrThrow({
      where: { entityType: "incident", entityId: incident.id, action: "incident.expire" },
      select: { actorType: true, actorName: true },
    });
    expect(entry).toEqual({ actorType: "system", actorName: "incident expiry" });
  });

  /** A descriptor rule with a raise of `tenant=acme` for a minute and of `tenant=hooli` for a day. */
  async function ruleWithRaises(deps: ControlDeps) {
    const id = uniqueName("raised");
    await createDescriptorRule(
      {
        id,
        domain: uniqueName("domain"),
        descriptor: [{ key: "tenant" }],
        limit: { algorithm: "fixed-window", limit: 10, windowMs: 60_000 },
      },
      operatorContext(),
      deps,
    );
    const raise = (value: string, durationMs: number) =>
      raiseDescriptorValue(
        { ruleId: id, descriptor: [{ key: "tenant", value }], factor: 2, durationMs },
        operatorContext("raise"),
        deps,
      );
    const short = await raise("acme", 60_000);
    const long = await raise("hooli", 86_400_000);
    return { id, short: short.raise.id, long: long.raise.id };
  }

  it("records a descriptor raise's expiry with the system actor and takes it out of its rule", async () => {
    const { db } = database.current();
    const rule = await ruleWithRaises(depsFor(db));
    const { recorded, worker } = startExpiryRecorder(db);
    await waitFor(() => recorded.includes(`${rule.id}/${rule.short}`), {
      what: "the raise's expiry to be recorded",
    });
    await worker.stop();
    const entries = await db.auditEntry.findMany({
      where: { entityId: rule.id, action: "descriptor-rule.expire-raise" },
      select: { actorType: true, actorName: true, before: true, after: true, policyVersion: true },
    });
    expect(entries).toHaveLength(1);
    const [entry] = entries;
    expect(entry).toMatchObject({ actorType: "system", actorName: "descriptor raise expiry" });
    const raiseIds = (json: unknown) =>
      ((json as { raises: { id: string }[] }).raises ?? []).map((raise) => raise.id);
    expect(raiseIds(entry?.before)).toEqual([rule.short, rule.long]);
    expect(raiseIds(entry?.after)).toEqual([rule.long]);
    // The rule's entry changed, so the expiry is a published version.
    expect(entry?.policyVersion).toEqual(expect.any(Number));
    const row = await db.descriptorRule.findUniqueOrThrow({
      where: { id: rule.id },
      select: { raises: true },
    });
    expect(raiseIds({ raises: row.raises })).toEqual([rule.long]);
  });

  it("two recorders at once record a raise's expiry exactly once", async () => {
    const { db } = database.current();
    const rule = await ruleWithRaises(depsFor(db));
    const later = depsFor(db, () => Date.now() + 120_000);
    const [first, second] = await Promise.all([
      recordDescriptorRaiseExpiries(later),
      recordDescriptorRaiseExpiries(later),
    ]);
    const ours = [...(first ?? []), ...(second ?? [])].filter((item) => item.ruleId === rule.id);
    expect(ours).toEqual([{ ruleId: rule.id, raiseId: rule.short }]);
    expect(
      await db.auditEntry.count({
        where: { entityId: rule.id, action: "descriptor-rule.expire-raise" },
      }),
    ).toBe(1);
    // Nothing left to record: a third pass writes nothing.
    expect(
      (await recordDescriptorRaiseExpiries(later)).filter((item) => item.ruleId === rule.id),
    ).toEqual([]);
  });

  it("npm run worker leads, and stops cleanly on SIGTERM", async () => {
    const worker = spawnWorkerProcess({
      DATABASE_URL: database.current().url,
      REDIS_KEY_PREFIX: testPrefix(),
    });
    const child = worker.child;
    children.push(child);
    const output = () => worker.output();
    await waitFor(() => output().includes("worker: leading"), {
      what: "the worker to lead",
      timeoutMs: 30_000,
    });
    const exited = once(child, "exit");
    child.kill("SIGTERM");
    const [code] = await exited;
    expect(code).toBe(0);
    expect(output()).toContain("worker: SIGTERM, stopping");
  });
});
