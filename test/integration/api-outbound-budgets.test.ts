/**
 * Outbound budgets through the API: each change is one audited policy change (one audit entry, a
 * new version holding the `outbound:<name>` entry), versions guard edits, hostile input is refused
 * by field writing nothing, export and import carry the budgets, and a budget created and edited
 * through the API reaches a running outbound limiter that reads the enforcer's live policy.
 */
import { randomBytes } from "node:crypto";
import { createEnforcer, type Enforcer } from "@limitplane/enforcer";
import { createOutboundLimiter, OutboundError } from "@limitplane/enforcer/callers";
import { MemoryStore } from "@limitplane/enforcer/limiter";
import { createRedisClient } from "@limitplane/enforcer/publication";
import { afterAll, describe, expect, inject, it } from "vitest";
import { installDeps, systemClock } from "@/lib/server/composition";
import { type CallOptions, provideApiHarness } from "./helpers/api-harness";

const api = provideApiHarness();
const operator = () => ({ token: api.as("operator").token });
const viewer = () => ({ token: api.as("viewer").token });
const PATH = "/api/v1/outbound-budgets";

const SENDGRID = {
  name: "sendgrid",
  displayName: "SendGrid mail API",
  limit: { algorithm: "token-bucket", capacity: 1, refillPerSec: 10 },
  keyBy: "account",
  reason: "the provider's documented quota",
};

async function refused(method: string, path: string, options: CallOptions, status: number) {
  const before = await api.fingerprint();
  const response = await api.call(method, path, options);
  expect(response.status, response.text).toBe(status);
  expect(await api.fingerprint()).toEqual(before);
  return response.body.error;
}

describe("outbound budgets", () => {
  it("POST 201: one audit entry and a policy version holding the compiled budget; 403 for a viewer, 401 without a token", async () => {
    const created = await api.call("POST", PATH, { as: operator(), body: SENDGRID });
    expect(created.status, created.text).toBe(201);
    const { reason: _reason, ...fields } = SENDGRID;
    expect(created.body.budget).toMatchObject({
      ...fields,
      concurrency: null,
      maxWaitMs: 30_000,
      version: 1,
    });
    const entry = await api.db().auditEntry.findFirstOrThrow({
      where: { id: BigInt(created.body.auditEntryId) },
    });
    expect(entry).toMatchObject({
      action: "outbound-budget.create",
      entityType: "outbound-budget",
      entityId: "sendgrid",
      actorType: "token",
      reason: SENDGRID.reason,
      before: null,
      policyVersion: created.body.policyVersion,
    });
    const stored = await api.db().policyEntry.findFirstOrThrow({
      where: { key: "outbound:sendgrid" },
    });
    expect(JSON.parse(stored.value)).toEqual({
      name: "sendgrid",
      limit: SENDGRID.limit,
      concurrency: null,
      maxWaitMs: 30_000,
      keyBy: "account",
    });

    const read = await api.call("GET", `${PATH}/sendgrid`, { as: viewer() });
    expect(read.status, read.text).toBe(200);
    expect(read.body.budget).toEqual(created.body.budget);
    const list = await api.call("GET", PATH, { as: viewer() });
    expect(list.body.budgets.map((budget: { name: string }) => budget.name)).toEqual(["sendgrid"]);

    await refused("POST", PATH, { as: viewer(), body: { ...SENDGRID, name: "other" } }, 403);
    await refused("POST", PATH, { body: { ...SENDGRID, name: "other" } }, 401);
    const missing = await api.call("GET", `${PATH}/nothing-here`, { as: viewer() });
    expect(missing.status).toBe(404);
  });

  it("POST 409 for a name taken, naming the field", async () => {
    const error = await refused("POST", PATH, { as: operator(), body: SENDGRID }, 409);
    expect(error.fieldErrors).toEqual([{ path: "name", message: '"sendgrid" is already taken' }]);
  });

  it("POST 400 names the field of each hostile value and writes nothing", async () => {
    const cases: { body: Record<string, unknown>; path: string; message: RegExp }[] = [
      { body: { name: "bad name!" }, path: "name", message: /outbound budget name/ },
      { body: { name: "x".repeat(10_000) }, path: "name", message: /1 to 63 characters/ },
      {
        body: { limit: null },
        path: "limit",
        message: /needs a limit, a concurrency cap, or both/,
      },
      { body: { maxWaitMs: -1 }, path: "maxWaitMs", message: /at least 0/ },
      // JSON has no NaN or Infinity: they arrive as null.
      {
        body: { maxWaitMs: null },
        path: "maxWaitMs",
        message: /must be a finite number, not null/,
      },
      { body: { maxWaitMs: 3_600_001 }, path: "maxWaitMs", message: /at most 3600000/ },
      { body: { maxWaitMs: "soon" }, path: "maxWaitMs", message: /not the text "soon"/ },
      { body: { keyBy: "customer" }, path: "keyBy", message: /single, host, account/ },
      {
        body: { concurrency: { max: 0 } },
        path: "concurrency.max",
        message: /concurrency\.max/,
      },
      {
        body: { limit: { algorithm: "token-bucket", capacity: -3, refillPerSec: 1 } },
        path: "limit.capacity",
        message: /capacity/,
      },
      { body: { surprise: true }, path: "surprise", message: /unknown field "surprise"/ },
    ];
    for (const { body, path, message } of cases) {
      const error = await refused(
        "POST",
        PATH,
        { as: operator(), body: { ...SENDGRID, name: "hostile", ...body } },
        400,
      );
      const found = error.fieldErrors.find(
        (item: { path: string; message: string }) =>
          item.path === path && message.test(item.message),
      );
      expect(found, `${JSON.stringify(body).slice(0, 80)}: ${JSON.stringify(error)}`).toBeDefined();
    }
  });

  it("PUT 200 replaces the budget and bumps its version; 409 on a stale version; 404 on none", async () => {
    const put = await api.call("PUT", `${PATH}/sendgrid`, {
      as: operator(),
      body: {
        limit: { algorithm: "token-bucket", capacity: 5, refillPerSec: 50 },
        concurrency: { max: 4 },
        keyBy: "account",
        expectedVersion: 1,
        reason: "the provider raised our quota for the day",
      },
    });
    expect(put.status, put.text).toBe(200);
    expect(put.body.budget).toMatchObject({
      displayName: null,
      concurrency: { max: 4, slotTtlMs: 10_000 },
      version: 2,
    });
    const entry = await api.db().auditEntry.findFirstOrThrow({
      where: { id: BigInt(put.body.auditEntryId) },
    });
    expect(entry).toMatchObject({
      action: "outbound-budget.update",
      before: { version: 1, limit: SENDGRID.limit },
      after: { version: 2, concurrency: { max: 4, slotTtlMs: 10_000 } },
    });
    const stale = await refused(
      "PUT",
      `${PATH}/sendgrid`,
      { as: operator(), body: { ...SENDGRID, name: undefined, expectedVersion: 1 } },
      409,
    );
    expect(stale.code).toBe("VERSION_CONFLICT");
    const { name: _name, ...body } = SENDGRID;
    await refused(
      "PUT",
      `${PATH}/ghost`,
      { as: operator(), body: { ...body, expectedVersion: 1 } },
      404,
    );
    await refused(
      "PUT",
      `${PATH}/sendgrid`,
      { as: viewer(), body: { ...body, expectedVersion: 2 } },
      403,
    );
  });

  it("export carries the budgets and import puts them back; a document without them removes them", async () => {
    const exported = await api.call("GET", "/api/v1/policy/export", { as: viewer() });
    const document = JSON.parse(exported.text);
    expect(document.outboundBudgets.map((budget: { name: string }) => budget.name)).toEqual([
      "sendgrid",
    ]);
    const admin = { token: api.as("admin").token };
    const { outboundBudgets, ...without } = document;
    const removed = await api.call("POST", "/api/v1/policy/import?reason=no%20budgets", {
      as: admin,
      body: without,
    });
    expect(removed.status, removed.text).toBe(200);
    expect((await api.call("GET", PATH, { as: viewer() })).body.budgets).toEqual([]);
    expect(await api.db().policyEntry.count({ where: { key: "outbound:sendgrid" } })).toBe(0);
    const restored = await api.call("POST", "/api/v1/policy/import?reason=budgets%20back", {
      as: admin,
      body: document,
    });
    expect(restored.status, restored.text).toBe(200);
    const read = await api.call("GET", `${PATH}/sendgrid`, { as: viewer() });
    const { version: _v, createdAt: _c, updatedAt: _u, ...budget } = read.body.budget;
    expect(budget).toEqual(outboundBudgets[0]);
  });

  it("DELETE 409 on a stale version, 200 with the version current; the entry leaves the policy", async () => {
    const current = await api.call("GET", `${PATH}/sendgrid`, { as: viewer() });
    const version = current.body.budget.version;
    const stale = await refused(
      "DELETE",
      `${PATH}/sendgrid`,
      { as: operator(), body: { expectedVersion: version + 5, reason: "stale" } },
      409,
    );
    expect(stale.code).toBe("VERSION_CONFLICT");
    const deleted = await api.call("DELETE", `${PATH}/sendgrid`, {
      as: operator(),
      body: { expectedVersion: version, reason: "provider dropped" },
    });
    expect(deleted.status, deleted.text).toBe(200);
    expect(await api.db().policyEntry.count({ where: { key: "outbound:sendgrid" } })).toBe(0);
    expect((await api.call("GET", `${PATH}/sendgrid`, { as: viewer() })).status).toBe(404);
  });
});

describe("a running outbound limiter following the policy", () => {
  const redisUrl = inject("redisUrl");
  const redis = createRedisClient("control", { url: redisUrl });
  let enforcer: Enforcer | undefined;

  afterAll(async () => {
    await enforcer?.stop();
    redis.disconnect();
  });

  it("picks up a budget created through the API, and its new rate when it is edited", async () => {
    const prefix = `${inject("redisKeyPrefix")}${randomBytes(3).toString("hex")}:`;
    const db = api.db();
    installDeps({
      control: { db, publisher: { db, redis, prefix, clock: systemClock }, clock: systemClock },
    });
    // A change publishes the whole policy under the new prefix before the enforcer starts.
    const seeded = await api.call("POST", PATH, {
      as: operator(),
      body: {
        name: "seed",
        limit: null,
        concurrency: { max: 1 },
        reason: "publish a first policy",
      },
    });
    expect(seeded.status, seeded.text).toBe(201);
    enforcer = await createEnforcer({
      expectedGateways: 1,
      store: () => new MemoryStore(),
      controlPlane: { pollIntervalMs: 600_000 },
      reporting: { heartbeatIntervalMs: 60_000, metricsFlushIntervalMs: 60_000 },
      logger: { log: () => {} },
      redis: { url: redisUrl, keyPrefix: prefix },
    });
    const running = enforcer;
    const limiter = createOutboundLimiter({
      client: redis,
      keyPrefix: `${prefix}callers:`,
      policy: running,
    });
    try {
      const scope = "outbound:partner-api";
      await expect(limiter.acquire(scope)).rejects.toMatchObject({ code: "unknown-scope" });

      const created = await api.call("POST", PATH, {
        as: operator(),
        body: {
          name: "partner-api",
          limit: { algorithm: "token-bucket", capacity: 1, refillPerSec: 0.1 },
          reason: "one call every 10 s",
        },
      });
      expect(created.status, created.text).toBe(201);
      expect(created.body.published).toBe(true);
      await expect
        .poll(() => running.outboundBudget("partner-api")?.limit, { timeout: 20_000 })
        .toEqual({ algorithm: "token-bucket", capacity: 1, refillPerSec: 0.1 });
      const first = await limiter.acquire(scope);
      expect(first.turnAtMs).not.toBeNull();
      // The next turn is 10 s away: a caller that waits at most 1 s is refused, charged nothing.
      const late = await limiter.acquire(scope, { maxWaitMs: 1_000 }).catch((error) => error);
      expect(late).toBeInstanceOf(OutboundError);
      expect(late.code).toBe("max-wait");

      const raised = await api.call("PUT", `${PATH}/partner-api`, {
        as: operator(),
        body: {
          limit: { algorithm: "token-bucket", capacity: 100, refillPerSec: 1_000 },
          expectedVersion: created.body.budget.version,
          reason: "the partner raised our quota",
        },
      });
      expect(raised.status, raised.text).toBe(200);
      await expect
        .poll(() => limiter.budgetOf(scope).limit, { timeout: 20_000 })
        .toEqual({ algorithm: "token-bucket", capacity: 100, refillPerSec: 1_000 });
      // Ten calls in a row now go at once, where the old rate gave one per 10 s.
      for (let call = 0; call < 10; call++) {
        const permit = await limiter.acquire(scope, { maxWaitMs: 0 });
        expect(permit.scope).toBe(scope);
      }
    } finally {
      limiter.close();
    }
  });
});
