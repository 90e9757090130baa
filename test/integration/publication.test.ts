import { randomBytes } from "node:crypto";
import { PolicyState, parsePolicyDelta } from "@limitplane/enforcer/policy";
import {
  loadPolicySnapshot,
  parsePolicyAnnouncement,
  policyRedisNames,
  publishPolicySnapshot,
  readPolicyDeltas,
  readPolicyHead,
} from "@limitplane/enforcer/publication";
import { exampleSnapshot } from "@limitplane/enforcer/testing";
import type { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { ControlDeps } from "@/lib/control/deps";
import type {
  DrainOutcome,
  SnapshotPublisher,
} from "@/lib/control/outbox/publish-pending-snapshots";
import { publishPendingSnapshots } from "@/lib/control/outbox/publish-pending-snapshots";
import { republishLatestIfBehind } from "@/lib/control/outbox/republish-latest";
import { getCurrentSnapshot } from "@/lib/control/policy/get-current-snapshot";
import { createTier } from "@/lib/control/tier/create-tier";
import { systemClock } from "@/lib/server/composition";
import { createRedis } from "@/lib/server/redis";
import { publishSnapshotsJob, startWorker, type Worker } from "@/lib/worker";
import { createOwnRedisServer, type OwnRedisServer } from "./helpers/own-redis-server";
import { importExamplePolicy, operatorContext, uniqueName } from "./helpers/policy-fixtures";
import { provideTestDatabase } from "./helpers/test-database";
import { waitFor } from "./helpers/wait-for";

const database = provideTestDatabase();
const sharedRedisUrl = inject("redisUrl");
const clients: Redis[] = [];
const workers: Worker[] = [];
let ownRedis: OwnRedisServer | null = null;

/** A prefix of this test's own, under the run's, so tests never see each other's keys. */
function testPrefix(): string {
  return `${inject("redisKeyPrefix")}${randomBytes(3).toString("hex")}:`;
}

function control(url = sharedRedisUrl): Redis {
  const client = createRedis("control", { url, connectionName: "lp-test-publication" });
  clients.push(client);
  return client;
}

/** Subscribes to the announce channel; `versions` fills as announcements arrive. */
async function listen(prefix: string, url = sharedRedisUrl): Promise<{ versions: number[] }> {
  const subscriber = createRedis("subscriber", { url });
  clients.push(subscriber);
  const versions: number[] = [];
  subscriber.on("message", (_channel: string, message: string) => {
    const announcement = parsePolicyAnnouncement(message);
    if (announcement !== null) versions.push(announcement.version);
  });
  await subscriber.subscribe(policyRedisNames(prefix).announce);
  return { versions };
}

function bucket(capacity: number) {
  return { algorithm: "token-bucket" as const, capacity, refillPerSec: capacity / 10 };
}

/** The example policy at `version` as a binary snapshot, published whole. */
function publishExample(redis: Redis, prefix: string, version: number) {
  const state = PolicyState.fromSnapshot(exampleSnapshot(() => {}, { version }));
  return publishPolicySnapshot(redis, prefix, {
    version,
    checksum: state.checksum,
    entries: state.size.entries,
    mode: "publish",
    bytes: state.toBinary(),
  });
}

/** The version at Redis's head (0: none). */
async function storedVersion(redis: Redis, prefix: string): Promise<number> {
  return Number((await redis.hget(policyRedisNames(prefix).head, "version")) ?? 0);
}

/** What an enforcer starting now would hold: the head's snapshot plus the deltas logged after it. */
async function policyInRedis(redis: Redis, prefix: string): Promise<PolicyState> {
  const head = await readPolicyHead(redis, prefix);
  if (head.status !== "ok") throw new Error(`no readable head: ${JSON.stringify(head)}`);
  const loaded = await loadPolicySnapshot(redis, prefix, head.head);
  if (loaded.status !== "ok") throw new Error(`snapshot refused: ${JSON.stringify(loaded.errors)}`);
  const state = loaded.state;
  const texts = await readPolicyDeltas(redis, prefix, state.version + 1, head.head.version);
  for (const text of texts) {
    const delta = parsePolicyDelta(text);
    if (!delta.ok) throw new Error(`delta refused: ${JSON.stringify(delta.errors)}`);
    const applied = state.applyDelta(delta.value);
    if (!applied.ok) throw new Error(`delta refused: ${JSON.stringify(applied.errors)}`);
  }
  expect(state.version).toBe(head.head.version);
  return state;
}

beforeAll(async () => {
  await importExamplePolicy({ db: database.current().db, publisher: null, clock: systemClock });
});

afterAll(async () => {
  await Promise.all(workers.map((worker) => worker.stop()));
  for (const client of clients) client.disconnect();
  await ownRedis?.stop();
});

describe("publishPolicySnapshot (the swap script)", () => {
  it("makes only newer versions the head, and announces each applied version once", async () => {
    const redis = control();
    const prefix = testPrefix();
    const announced = await listen(prefix);
    const status = async (version: number) => (await publishExample(redis, prefix, version)).status;
    expect(await status(2)).toBe("applied");
    expect(await status(1)).toBe("not-newer");
    expect(await status(2)).toBe("not-newer");
    expect(await status(3)).toBe("applied");
    await waitFor(() => announced.versions.length >= 2, { what: "two announcements" });
    expect(announced.versions).toEqual([2, 3]);
    expect((await policyInRedis(redis, prefix)).version).toBe(3);
  });

  it("works after Redis forgets its scripts (EVALSHA falls back to EVAL)", async () => {
    const redis = control();
    const prefix = testPrefix();
    await redis.script("FLUSH");
    expect((await publishExample(redis, prefix, 1)).status).toBe("applied");
  });

  it("loadPolicySnapshot refuses a damaged snapshot, a missing one, and one that is not its head's", async () => {
    const redis = control();
    const prefix = testPrefix();
    expect(await readPolicyHead(redis, prefix)).toEqual({ status: "none" });
    await publishExample(redis, prefix, 4);
    const head = await readPolicyHead(redis, prefix);
    if (head.status !== "ok") throw new Error("no head");
    const key = policyRedisNames(prefix).snapshot(4);
    const bytes = await redis.getBuffer(key);
    if (bytes === null) throw new Error("no snapshot");
    const load = () => loadPolicySnapshot(redis, prefix, head.head);

    const damaged = Buffer.from(bytes);
    const at = damaged.length >> 1;
    damaged[at] = (damaged[at] ?? 0) ^ 0xff;
    await redis.set(key, damaged);
    expect(await load()).toEqual({
      status: "invalid",
      errors: [
        {
          path: ["snapshot", "digest"],
          message:
            "the SHA-256 of the bytes does not match the trailer: damaged in transit or storage",
        },
      ],
    });

    const other = PolicyState.fromSnapshot(exampleSnapshot(() => {}, { version: 9 }));
    await redis.set(key, Buffer.from(other.toBinary()));
    const read = await load();
    expect(read.status === "invalid" && read.errors[0]?.message).toBe(
      `snapshot 4 holds version 9 (checksum ${other.checksum}, ${other.size.entries} entries), not the 4 (checksum ${head.head.snapshotChecksum}, ${head.head.snapshotEntries} entries) its head says`,
    );

    await redis.del(key);
    const missing = await load();
    expect(missing.status === "invalid" && missing.errors[0]?.message).toBe(
      `snapshot 4 is missing from Redis (${key})`,
    );
  });

  it("two publishers racing with versions in any order never move Redis back", async () => {
    const first = control();
    const second = control();
    const watcher = control();
    const prefix = testPrefix();
    const announced = await listen(prefix);
    const observed: number[] = [];
    let watching = true;
    const watching$ = (async () => {
      while (watching) observed.push(await storedVersion(watcher, prefix));
    })();
    const versions = Array.from({ length: 40 }, (_, index) => index + 1).sort(
      () => Math.random() - 0.5,
    );
    const results = await Promise.all(
      versions.map((version, index) =>
        publishExample(index % 2 === 0 ? first : second, prefix, version),
      ),
    );
    watching = false;
    await watching$;
    // A publisher whose head moved while it wrote is told so ("raced") and changes nothing; the
    // head ends at the newest version applied.
    const applied = versions.filter((_, index) => results[index]?.status === "applied");
    expect(await storedVersion(watcher, prefix)).toBe(Math.max(...applied));
    for (let index = 1; index < observed.length; index++) {
      expect(observed[index]).toBeGreaterThanOrEqual(observed[index - 1] ?? 0);
    }
    await waitFor(() => announced.versions.at(-1) === Math.max(...applied), {
      what: "the newest version announced",
    });
    for (let index = 1; index < announced.versions.length; index++) {
      expect(announced.versions[index]).toBeGreaterThan(announced.versions[index - 1] ?? 0);
    }
  });
});

describe("publication through the outbox", () => {
  it("versions arrive in order, each published as its change commits", async () => {
    const { db } = database.current();
    const prefix = testPrefix();
    const redis = control();
    const deps: ControlDeps = {
      db,
      publisher: { db, redis, prefix, clock: systemClock },
      clock: systemClock,
    };
    // Anything left pending (the import) goes out first, and this fresh prefix gets the latest
    // version as a snapshot: a first publication may cover several versions at once, while
    // every version after it is announced as its own delta.
    await publishPendingSnapshots({ db, redis, prefix, clock: systemClock }, "wait");
    await republishLatestIfBehind({ db, redis, prefix, clock: systemClock });
    const announced = await listen(prefix);
    const produced: number[] = [];
    for (let index = 0; index < 5; index++) {
      const result = await createTier(
        { name: uniqueName("ordered"), limit: bucket(100 + index) },
        operatorContext(),
        deps,
      );
      expect(result.published).toBe(true);
      if (result.policyVersion !== null) produced.push(result.policyVersion);
    }
    await waitFor(() => announced.versions.length >= 5, { what: "five announcements" });
    expect(announced.versions).toEqual(produced);
    // Redis holds exactly the set Postgres holds at that version: same version, same checksum,
    // rebuilt from the snapshot and the log as an enforcer would.
    const inRedis = await policyInRedis(redis, prefix);
    const stored = await getCurrentSnapshot({ db });
    expect({ version: inRedis.version, checksum: inRedis.checksum }).toEqual({
      version: stored.version,
      checksum: stored.checksum,
    });
    expect(inRedis.size.entries).toBe(stored.entries);
    expect(stored.publishedAt).not.toBeNull();
  });

  it("two publishers draining at once publish every version once, in order, and never go back", async () => {
    const { db } = database.current();
    const prefix = testPrefix();
    const publishers: SnapshotPublisher[] = [
      { db, redis: control(), prefix, clock: systemClock },
      { db, redis: control(), prefix, clock: systemClock },
    ];
    await publishPendingSnapshots({ db, redis: control(), prefix, clock: systemClock }, "wait");
    await republishLatestIfBehind({ db, redis: control(), prefix, clock: systemClock });
    const watcher = control();
    const announced = await listen(prefix);
    const observed: number[] = [];
    let running = true;
    const loops = [
      ...publishers.map(async (publisher, index) => {
        while (running) await publishPendingSnapshots(publisher, index === 0 ? "wait" : "try");
      }),
      (async () => {
        while (running) observed.push(await storedVersion(watcher, prefix));
      })(),
    ];
    const deps: ControlDeps = { db, publisher: null, clock: systemClock };
    const produced: number[] = [];
    for (let index = 0; index < 8; index++) {
      const result = await createTier(
        { name: uniqueName("race"), limit: bucket(100) },
        operatorContext(),
        deps,
      );
      if (result.policyVersion !== null) produced.push(result.policyVersion);
    }
    await waitFor(async () => (await storedVersion(watcher, prefix)) === produced.at(-1), {
      what: "the last version in Redis",
    });
    running = false;
    await Promise.all(loops);
    await waitFor(() => announced.versions.at(-1) === produced.at(-1), {
      what: "the last announcement",
    });
    expect(announced.versions).toEqual(produced);
    for (let index = 1; index < observed.length; index++) {
      expect(observed[index]).toBeGreaterThanOrEqual(observed[index - 1] ?? 0);
    }
  });

  it("published says whether the version is in Redis when the response is sent, whoever published it", async () => {
    const { db, url } = database.current();
    const prefix = testPrefix();
    // The worker, woken by each commit's NOTIFY, races every service's own publication.
    const worker = startWorker({
      databaseUrl: url,
      leaderPollMs: 100,
      log: () => {},
      jobs: [
        publishSnapshotsJob({
          publisher: { db, redis: control(), prefix, clock: systemClock },
          pollMs: 60_000,
        }),
      ],
    });
    workers.push(worker);
    await worker.whenLeading();
    const probe = control();
    const deps: ControlDeps = {
      db,
      publisher: { db, redis: control(), prefix, clock: systemClock },
      clock: systemClock,
    };
    const outcomes: { version: number | null; published: boolean; inRedis: number }[] = [];
    for (let round = 0; round < 10; round++) {
      await Promise.all(
        Array.from({ length: 5 }, async () => {
          const result = await createTier(
            { name: uniqueName("race"), limit: bucket(100) },
            operatorContext(),
            deps,
          );
          outcomes.push({
            version: result.policyVersion,
            published: result.published,
            inRedis: await storedVersion(probe, prefix),
          });
        }),
      );
    }
    await worker.stop();
    workers.splice(workers.indexOf(worker), 1);
    expect(outcomes).toHaveLength(50);
    for (const outcome of outcomes) {
      expect(outcome.version).not.toBeNull();
      expect(outcome).toMatchObject({ published: true });
      expect(outcome.inRedis).toBeGreaterThanOrEqual(outcome.version ?? Number.POSITIVE_INFINITY);
    }
  });

  it("with Redis stopped during several changes, the worker catches up in order when it returns", async () => {
    const { db, url } = database.current();
    ownRedis = await createOwnRedisServer();
    await ownRedis.start();
    const prefix = testPrefix();
    const serviceRedis = control(ownRedis.url);
    const workerRedis = control(ownRedis.url);
    const probe = control(ownRedis.url);
    const drains: DrainOutcome[] = [];
    const publisher: SnapshotPublisher & { redis: Redis } = {
      db,
      redis: workerRedis,
      prefix,
      clock: systemClock,
      backoff: { initialMs: 100, maxMs: 400 },
    };
    const worker = startWorker({
      databaseUrl: url,
      leaderPollMs: 200,
      log: () => {},
      jobs: [
        publishSnapshotsJob({
          publisher,
          pollMs: 60_000,
          onDrain: (outcome) => drains.push(outcome),
        }),
      ],
    });
    workers.push(worker);
    await worker.whenLeading();
    const deps: ControlDeps = {
      db,
      publisher: { db, redis: serviceRedis, prefix, clock: systemClock },
      clock: systemClock,
    };
    const change = () =>
      createTier({ name: uniqueName("outage"), limit: bucket(100) }, operatorContext(), deps);

    const before = await change();
    await waitFor(async () => (await storedVersion(probe, prefix)) === before.policyVersion, {
      what: "the first version in Redis",
    });

    await ownRedis.stop();
    const during = [await change(), await change(), await change()];
    expect(during.map((result) => result.published)).toEqual([false, false, false]);
    const last = during.at(-1)?.policyVersion;
    // The worker has tried, failed, and is backing off.
    await waitFor(() => drains.some((outcome) => outcome.status === "failed"), {
      what: "a failed attempt",
    });
    const head = await db.outboxEvent.findFirstOrThrow({
      where: { publishedAt: null },
      orderBy: { id: "asc" },
      select: { attempts: true, lastError: true },
    });
    expect(head.attempts).toBeGreaterThan(0);
    expect(head.lastError).not.toBeNull();

    await ownRedis.start();
    const appliedVersions = () =>
      drains.flatMap((outcome) =>
        outcome.status === "published" || outcome.status === "failed"
          ? outcome.versions
              .filter((published) => published.applied)
              .map((published) => published.version)
          : [],
      );
    // The drain reports after it has marked the rows published and committed.
    await waitFor(() => appliedVersions().includes(last ?? -1), {
      what: `the worker to publish version ${last} after the restart`,
      timeoutMs: 20_000,
    });
    expect(appliedVersions().slice(-3)).toEqual(during.map((result) => result.policyVersion));
    expect(await db.outboxEvent.count({ where: { publishedAt: null } })).toBe(0);
    expect((await policyInRedis(probe, prefix)).version).toBe(last);
  });
});

describe("a Redis that lost the policy", () => {
  it("gets the latest version again from the worker, with nothing pending in the outbox", async () => {
    const { db, url } = database.current();
    await createTier({ name: uniqueName("forgotten"), limit: bucket(50) }, operatorContext(), {
      db,
      publisher: null,
      clock: systemClock,
    });
    await db.outboxEvent.updateMany({
      where: { publishedAt: null },
      data: { publishedAt: new Date() },
    });
    // A fresh prefix is a Redis that restarted without persistence: no policy at all, while the
    // outbox says everything was published.
    const prefix = testPrefix();
    const redis = control();
    expect(await storedVersion(redis, prefix)).toBe(0);

    // One worker leads per database: stop the earlier tests' so this one takes the lead.
    await Promise.all(workers.splice(0).map((earlier) => earlier.stop()));
    const republished: number[] = [];
    const worker = startWorker({
      databaseUrl: url,
      leaderPollMs: 200,
      log: () => {},
      jobs: [
        publishSnapshotsJob({
          publisher: { db, redis: control(), prefix, clock: systemClock },
          pollMs: 60_000,
          onRepublish: (outcome) => {
            if (outcome.status === "republished") republished.push(outcome.version);
          },
        }),
      ],
    });
    workers.push(worker);
    await waitFor(async () => (await storedVersion(redis, prefix)) > 0, {
      what: "the worker to publish the latest version again",
      timeoutMs: 20_000,
    });
    const latest = await db.policyVersion.findFirstOrThrow({
      orderBy: { version: "desc" },
      select: { version: true },
    });
    expect(await storedVersion(redis, prefix)).toBe(latest.version);
    expect(republished).toEqual([latest.version]);
    expect((await policyInRedis(redis, prefix)).version).toBe(latest.version);
  });
});
