/**
 * An installation upgraded from whole snapshots: Postgres holds versions with their compiled
 * snapshot and no entries. The first change after the upgrade moves the latest snapshot to
 * entries once, publishes it, and an enforcer waiting for a policy follows the head.
 */
import { randomBytes } from "node:crypto";
import { createEnforcer, type Enforcer } from "@limitplane/enforcer";
import { MemoryStore } from "@limitplane/enforcer/limiter";
import { compileSnapshot, parsePolicyDocument } from "@limitplane/enforcer/policy";
import { createRedisClient } from "@limitplane/enforcer/publication";
import type { Redis } from "ioredis";
import { afterAll, describe, expect, inject, it } from "vitest";
import { toJson } from "@/lib/control/stored";
import { createTier } from "@/lib/control/tier/create-tier";
import { systemClock } from "@/lib/server/composition";
import { examplePolicyForSeed } from "../../scripts/seed";
import { waitFor } from "./helpers/gateway-processes";
import {
  importExamplePolicy,
  latestSnapshot,
  operatorContext,
  uniqueName,
} from "./helpers/policy-fixtures";
import { provideTestDatabase } from "./helpers/test-database";

const database = provideTestDatabase();
const redisUrl = inject("redisUrl");
const clients: Redis[] = [];
let enforcer: Enforcer | null = null;

afterAll(async () => {
  await enforcer?.stop();
  for (const client of clients) client.disconnect();
});

describe("an installation upgraded from whole snapshots", () => {
  it("moves to entries on its first change, once, and its enforcers follow the head", async () => {
    const { db } = database.current();
    const prefix = `${inject("redisKeyPrefix")}${randomBytes(3).toString("hex")}:`;
    const redis = createRedisClient("control", { url: redisUrl });
    clients.push(redis);
    await importExamplePolicy({ db, publisher: null, clock: systemClock });

    // What the version before deltas left: version 1 with its snapshot, and no entries.
    const parsed = parsePolicyDocument(examplePolicyForSeed(Date.now()));
    if (!parsed.ok) throw new Error("the example does not parse");
    const legacy = compileSnapshot(parsed.value, {
      version: 1,
      compiledAt: new Date().toISOString(),
    });
    await db.policyEntry.deleteMany({});
    await db.outboxEvent.deleteMany({});
    await db.policyVersion.update({
      where: { version: 1 },
      data: {
        entries: null,
        baseChecksum: null,
        delta: null,
        changes: null,
        checksum: legacy.checksum,
        snapshot: toJson(legacy),
      },
    });
    enforcer = await createEnforcer({
      expectedGateways: 1,
      redis: { url: redisUrl, keyPrefix: prefix },
      store: () => new MemoryStore(),
      controlPlane: { pollIntervalMs: 100, startupWaitMs: 100 },
      logger: { log: () => {} },
    });
    expect(enforcer.status().policy).toBeNull();

    // The first change after the upgrade.
    const name = uniqueName("after-upgrade");
    const result = await createTier(
      { name, limit: { algorithm: "token-bucket", capacity: 70, refillPerSec: 7 } },
      operatorContext("first change after the upgrade"),
      { db, publisher: { db, redis, prefix, clock: systemClock }, clock: systemClock },
    );
    const versions = await db.policyVersion.findMany({
      orderBy: { version: "asc" },
      select: { version: true, entries: true, delta: true, auditEntryId: true },
    });
    // Version 2 is the move (the snapshot's entries, no delta, no audit entry: nothing in the
    // policy changed); version 3 is the change, as a delta.
    expect(
      versions.map((row) => [row.version, row.delta === null, row.auditEntryId === null]),
    ).toEqual([
      [1, true, false],
      [2, true, true],
      [3, false, false],
    ]);
    expect(result).toMatchObject({ policyVersion: 3, published: true });
    const compiled = await latestSnapshot(db);
    expect(compiled.policy.tiers.map((tier) => tier.name)).toContain(name);
    expect(compiled.policy.customerOverrides).toEqual(legacy.policy.customerOverrides);
    expect(compiled.policy.endpointClasses).toEqual(legacy.policy.endpointClasses);

    const current = enforcer;
    await waitFor("the enforcer to follow the head", () =>
      current.status().policy?.version === 3 ? true : undefined,
    );
    expect(current.status().policy).toMatchObject({ version: 3, via: "snapshot" });
    expect(current.status().snapshotErrors.count).toBe(0);
  });
});
