/**
 * Enforcers following the control plane change by change, against the real Postgres and Redis:
 * deltas applied in order, a missed announcement filled from the log, a gap the log cannot fill
 * resynced from a snapshot, a restarted enforcer catching up, and a corrupted delta refused with
 * the last good policy kept.
 */
import { randomBytes } from "node:crypto";
import {
  createEnforcer,
  type Enforcer,
  type EnforcerOptions,
  type EnforcerStatus,
} from "@limitplane/enforcer";
import { MemoryStore } from "@limitplane/enforcer/limiter";
import {
  canonicalJson,
  EntrySetSum,
  entriesOfSnapshotPolicy,
  entryDigestHex,
  entryText,
  type PolicyEntry,
  PolicyState,
  parseEntry,
} from "@limitplane/enforcer/policy";
import {
  createRedisClient,
  policyRedisNames,
  publishPolicyDelta,
  publishPolicySnapshot,
} from "@limitplane/enforcer/publication";
import { exampleSnapshot } from "@limitplane/enforcer/testing";
import type { Redis } from "ioredis";
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from "vitest";
import { createCustomer } from "@/lib/control/customer/create-customer";
import { createCustomerOverride } from "@/lib/control/customer-override/create-customer-override";
import { updateCustomerOverride } from "@/lib/control/customer-override/update-customer-override";
import type { ControlDeps } from "@/lib/control/deps";
import { publishWholePolicy } from "@/lib/control/outbox/publish-pending-snapshots";
import { systemClock } from "@/lib/server/composition";
import { waitFor } from "./helpers/gateway-processes";
import { importExamplePolicy, operatorContext, uniqueName } from "./helpers/policy-fixtures";
import { provideTestDatabase } from "./helpers/test-database";

const database = provideTestDatabase();
const redisUrl = inject("redisUrl");
const clients: Redis[] = [];
const running: Enforcer[] = [];
let redis: Redis;

function client(role: "control" | "decisions" | "subscriber"): Redis {
  const made = createRedisClient(role, { url: redisUrl });
  clients.push(made);
  return made;
}

beforeAll(() => {
  redis = client("control");
});

afterEach(async () => {
  await Promise.all(running.splice(0).map((enforcer) => enforcer.stop()));
});

afterAll(() => {
  for (const made of clients) made.disconnect();
});

function testPrefix(): string {
  return `${inject("redisKeyPrefix")}${randomBytes(3).toString("hex")}:`;
}

/** A subscriber that hides the announcements `drop` picks, as a lost message would. */
function droppingSubscriber(drop: (message: string) => boolean): Redis {
  const subscriber = client("subscriber");
  const on = subscriber.on.bind(subscriber);
  subscriber.on = ((event: string, listener: (...args: unknown[]) => void) =>
    event === "message"
      ? on(event, (channel: string, message: string) => {
          if (!drop(message)) listener(channel, message);
        })
      : on(event, listener)) as Redis["on"];
  return subscriber;
}

interface Started {
  readonly enforcer: Enforcer;
  readonly applied: NonNullable<EnforcerStatus["policy"]>[];
}

async function start(prefix: string, options: Partial<EnforcerOptions> = {}): Promise<Started> {
  const applied: NonNullable<EnforcerStatus["policy"]>[] = [];
  const enforcer = await createEnforcer({
    expectedGateways: 1,
    store: () => new MemoryStore(),
    // Far longer than any test: only announcements (and reads they cause) move the policy.
    controlPlane: { pollIntervalMs: 600_000 },
    reporting: { heartbeatIntervalMs: 60_000, metricsFlushIntervalMs: 60_000 },
    logger: { log: () => {} },
    ...options,
    redis: { url: redisUrl, keyPrefix: prefix, ...options.redis },
  });
  enforcer.onPolicyApplied((snapshot) => applied.push(snapshot));
  running.push(enforcer);
  return { enforcer, applied };
}

const version = (enforcer: Enforcer) => enforcer.status().policy?.version ?? 0;
const untilVersion = (enforcer: Enforcer, expected: number) =>
  waitFor(`version ${expected}`, () => (version(enforcer) >= expected ? true : undefined), {
    timeoutMs: 20_000,
  });

/** The account limit `customerId` (tier free) is held to now, as the enforcer resolves it. */
async function accountCapacity(enforcer: Enforcer, customerId: string) {
  const { decision } = await enforcer.check({ customerId, tier: "free", method: "GET", path: "/" });
  const account = decision.outcomes.find(
    (outcome) => outcome.scope === "tier:free" || outcome.scope.startsWith("customer:"),
  );
  return { scope: account?.scope, limit: account?.limit };
}

let deps: ControlDeps;
let prefix: string;

async function latestStored() {
  return database.current().db.policyVersion.findFirstOrThrow({
    orderBy: { version: "desc" },
    select: { version: true, checksum: true },
  });
}

/** A customer on the free tier, with an account override of `capacity`: one change. */
async function newOverride(capacity: number): Promise<{ customerId: string; version: number }> {
  const customerId = uniqueName("cust");
  await createCustomer(
    { id: customerId, displayName: customerId, tier: "free" },
    operatorContext(),
    deps,
  );
  const result = await createCustomerOverride(
    {
      customerId,
      endpointClass: null,
      limit: { algorithm: "token-bucket", capacity, refillPerSec: 10 },
    },
    operatorContext(),
    deps,
  );
  expect(result.published).toBe(true);
  return { customerId, version: result.policyVersion ?? -1 };
}

describe("enforcers following deltas", () => {
  beforeAll(async () => {
    const { db } = database.current();
    prefix = testPrefix();
    deps = { db, publisher: { db, redis, prefix, clock: systemClock }, clock: systemClock };
    await importExamplePolicy(deps);
  });

  it("apply each change's delta in order, as it is announced, and hold the set Postgres holds", async () => {
    const { enforcer, applied } = await start(prefix);
    const startedAt = version(enforcer);
    expect(startedAt).toBe((await latestStored()).version);
    const made: { customerId: string; version: number }[] = [];
    for (let index = 0; index < 5; index++) made.push(await newOverride(300 + index));
    await untilVersion(enforcer, made.at(-1)?.version ?? -1);
    const after = applied.filter((item) => item.version > startedAt);
    expect(after.map((item) => item.version)).toEqual(made.map((item) => item.version));
    expect(after.every((item) => item.via === "delta" && item.trigger === "announcement")).toBe(
      true,
    );
    expect(enforcer.status().policy?.checksum).toBe((await latestStored()).checksum);
    expect(await accountCapacity(enforcer, made[4]?.customerId ?? "")).toMatchObject({
      scope: `customer:${made[4]?.customerId}`,
      limit: 304,
    });
    expect(enforcer.status().snapshotErrors.count).toBe(0);
  });

  it("a missed announcement is a gap: detected by the next one, and filled from the log", async () => {
    let dropped = 0;
    let dropNext = false;
    const { enforcer, applied } = await start(prefix, {
      redis: {
        url: undefined,
        clients: {
          control: client("control"),
          decisions: client("decisions"),
          subscriber: droppingSubscriber(() => {
            if (!dropNext) return false;
            dropNext = false;
            dropped++;
            return true;
          }),
        },
      },
    });
    const startedAt = version(enforcer);
    dropNext = true;
    const missed = await newOverride(410);
    const next = await newOverride(420);
    expect(dropped).toBe(1);
    await untilVersion(enforcer, next.version);
    // Both deltas applied from the log in one catch-up (not a resync: that would say "snapshot").
    expect(
      applied.filter((item) => item.version > startedAt).map((item) => [item.version, item.via]),
    ).toEqual([[next.version, "delta"]]);
    expect(await accountCapacity(enforcer, missed.customerId)).toMatchObject({ limit: 410 });
    expect(enforcer.status().policy?.checksum).toBe((await latestStored()).checksum);
  });

  it("a gap the log cannot fill is resynced from the latest snapshot, swapped in whole", async () => {
    let isDropping = false;
    const { enforcer, applied } = await start(prefix, {
      redis: {
        url: undefined,
        clients: {
          control: client("control"),
          decisions: client("decisions"),
          subscriber: droppingSubscriber(() => isDropping),
        },
      },
    });
    const startedAt = version(enforcer);
    isDropping = true;
    const lost = await newOverride(510);
    await newOverride(520);
    // The log no longer holds the first missed delta, and a snapshot is written past it (what
    // the worker's compaction does): only a resync can reach the head now.
    await redis.hdel(policyRedisNames(prefix).deltas, String(lost.version));
    const compacted = await publishWholePolicy(deps.publisher ?? never(), "compact");
    expect(compacted.applied).toBe(true);
    isDropping = false;
    const last = await newOverride(530);
    await untilVersion(enforcer, last.version);
    const after = applied.filter((item) => item.version > startedAt);
    expect(after.map((item) => [item.version, item.via])).toEqual([[last.version, "snapshot"]]);
    expect(enforcer.status().policy?.checksum).toBe((await latestStored()).checksum);
    expect(await accountCapacity(enforcer, lost.customerId)).toMatchObject({ limit: 510 });
    expect(enforcer.status().snapshotErrors.count).toBe(0);
  });

  it("a restarted enforcer catches up: the snapshot, then every delta logged after it", async () => {
    const first = await start(prefix);
    const stoppedAt = version(first.enforcer);
    await first.enforcer.stop();
    const whileDown = [await newOverride(610), await newOverride(620), await newOverride(630)];
    const { customerId } = whileDown[0] ?? never();
    await updateCustomerOverride(
      {
        customerId,
        endpointClass: null,
        expectedVersion: 1,
        limit: { algorithm: "token-bucket", capacity: 611, refillPerSec: 10 },
      },
      operatorContext("changed while the gateway was down"),
      deps,
    );
    const latest = await latestStored();
    expect(latest.version).toBeGreaterThan(stoppedAt);
    const restarted = await start(prefix);
    expect(version(restarted.enforcer)).toBe(latest.version);
    expect(restarted.applied).toEqual([]);
    expect(restarted.enforcer.status().policy).toMatchObject({
      version: latest.version,
      checksum: latest.checksum,
      via: "snapshot",
      trigger: "startup",
    });
    expect(await accountCapacity(restarted.enforcer, customerId)).toMatchObject({ limit: 611 });
  });
});

function never(): never {
  throw new Error("unreachable");
}

describe("a corrupted delta", () => {
  it("is refused, counted once and reported; the last good policy stays until a good version comes", async () => {
    const ownPrefix = testPrefix();
    const snapshot = exampleSnapshot(() => {}, { version: 1 });
    const entries = entriesOfSnapshotPolicy(snapshot.policy);
    /** Publishes `version` of the set `entries` as one binary snapshot, bytes damaged by `damage`. */
    const publishWhole = async (
      version: number,
      set: PolicyEntry[],
      damage: (bytes: Uint8Array) => void = () => {},
    ) => {
      const built = PolicyState.build(version, set);
      if (!built.ok) throw new Error("not a policy");
      const bytes = built.value.toBinary();
      damage(bytes);
      return publishPolicySnapshot(redis, ownPrefix, {
        version,
        checksum: built.value.checksum,
        entries: set.length,
        mode: "publish",
        bytes,
      });
    };
    const sum = new EntrySetSum();
    for (const entry of entries) sum.add(entryDigestHex(entry.key, entryText(entry)));
    expect((await publishWhole(1, entries)).status).toBe("applied");
    const { enforcer } = await start(ownPrefix);
    expect(version(enforcer)).toBe(1);
    expect(await accountCapacity(enforcer, "zeta")).toMatchObject({
      scope: "tier:free",
      limit: 20,
    });

    // Version 2 gives zeta an override of 50; the delta on the wire says 5000 instead.
    const value = {
      customerId: "zeta",
      endpointClass: null,
      limit: {
        algorithm: "token-bucket",
        capacity: 50,
        refillPerSec: 5,
        mode: "enforce",
        onStoreFailure: "open",
      },
    };
    const genuine = new EntrySetSum(sum.hex).add(
      entryDigestHex("customer:zeta", canonicalJson(value)),
    ).hex;
    const tampered = {
      ...value,
      limit: { ...value.limit, capacity: 5_000 },
    };
    const deltaJson = JSON.stringify({
      format: 1,
      version: 2,
      base: 1,
      compiledAt: new Date().toISOString(),
      baseChecksum: sum.hex,
      checksum: genuine,
      changes: [{ key: "customer:zeta", value: tampered }],
    });
    expect(
      await publishPolicyDelta(redis, ownPrefix, {
        version: 2,
        checksum: genuine,
        baseChecksum: sum.hex,
        entries: entries.length + 1,
        deltaJson,
      }),
    ).toMatchObject({ status: "applied" });
    const errors = await waitFor("the refusal", () => {
      const report = enforcer.status().snapshotErrors;
      return report.count > 0 ? report : undefined;
    });
    expect(errors).toMatchObject({ count: 1, lastVersion: 2 });
    expect(errors.lastMessage).toMatch(/promises checksum .* the delta was altered or damaged/);
    expect(version(enforcer)).toBe(1);
    expect(await accountCapacity(enforcer, "zeta")).toMatchObject({
      scope: "tier:free",
      limit: 20,
    });
    // Reading again (a poll) finds the same damaged delta in the log: still counted once.
    await enforcer.refreshPolicy();
    await enforcer.refreshPolicy();
    expect(enforcer.status().snapshotErrors.count).toBe(1);

    // A good version 3, published whole (as the control plane repairs), is applied.
    const zeta = parseEntry("customer:zeta", value);
    if (!zeta.ok) throw new Error("zeta's override does not parse");
    expect((await publishWhole(3, [...entries, zeta.value])).status).toBe("applied");
    await untilVersion(enforcer, 3);
    expect(await accountCapacity(enforcer, "zeta")).toMatchObject({
      scope: "customer:zeta",
      limit: 50,
    });
    expect(enforcer.status().snapshotErrors.count).toBe(1);

    // A whole snapshot damaged in one byte (its digest no longer matches): refused too, version
    // 3 stays.
    await publishWhole(4, [...entries, zeta.value], (bytes) => {
      const at = bytes.length >> 1;
      bytes[at] = (bytes[at] ?? 0) ^ 0xff;
    });
    const second = await waitFor("the second refusal", () => {
      const report = enforcer.status().snapshotErrors;
      return report.count > 1 ? report : undefined;
    });
    expect(second).toMatchObject({ count: 2, lastVersion: 4 });
    expect(second.lastMessage).toBe(
      "snapshot.digest: the SHA-256 of the bytes does not match the trailer: damaged in transit or storage",
    );
    expect(version(enforcer)).toBe(3);
    expect(await accountCapacity(enforcer, "zeta")).toMatchObject({ limit: 50 });
  });
});
