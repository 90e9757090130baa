/**
 * Raising an outbound budget for a while through the API: the raise and its audit entry commit in
 * one transaction, the guardrails of incident overrides refuse it by field writing nothing, a
 * revert ends it early, its expiry is recorded once by the system, and hostile input is refused.
 * Then the raise reaches a running enforcer through the published policy (real Redis), and an
 * outbound limiter following it applies the raised budget.
 */
import { randomBytes } from "node:crypto";
import { createEnforcer, type Enforcer } from "@limitplane/enforcer";
import { createOutboundLimiter } from "@limitplane/enforcer/callers";
import { MemoryStore } from "@limitplane/enforcer/limiter";
import { createRedisClient } from "@limitplane/enforcer/publication";
import { afterAll, describe, expect, inject, it } from "vitest";
import type { ControlDeps } from "@/lib/control/deps";
import { recordOutboundRaiseExpiries } from "@/lib/control/outbound-budget/record-outbound-raise-expiries";
import { installDeps, systemClock } from "@/lib/server/composition";
import { type CallOptions, provideApiHarness } from "./helpers/api-harness";

const api = provideApiHarness();
const operator = () => ({ token: api.as("operator").token });
const viewer = () => ({ token: api.as("viewer").token });
const PATH = "/api/v1/outbound-budgets";
const MINUTE_MS = 60_000;

const BASE_LIMIT = { algorithm: "token-bucket", capacity: 10, refillPerSec: 10 };
const RAISED_LIMIT = { algorithm: "token-bucket", capacity: 30, refillPerSec: 30 };

/** Harness deps: the harness's clock, which the test moves. */
function harnessDeps(): ControlDeps {
  return { db: api.db(), publisher: null, clock: { nowMs: api.nowMs } };
}

async function refused(method: string, path: string, options: CallOptions, status: number) {
  const before = await api.fingerprint();
  const response = await api.call(method, path, options);
  expect(response.status, response.text).toBe(status);
  expect(await api.fingerprint()).toEqual(before);
  return response.body.error;
}

async function createBudget(name: string): Promise<void> {
  const created = await api.call("POST", PATH, {
    as: operator(),
    body: {
      name,
      limit: BASE_LIMIT,
      concurrency: { max: 4 },
      reason: "the provider's documented quota",
    },
  });
  expect(created.status, created.text).toBe(201);
}

/** The transaction that last wrote a row: Postgres's `xmin`. */
async function writerOf(table: "OutboundBudget" | "AuditEntry", where: string | bigint) {
  const rows =
    table === "OutboundBudget"
      ? await api.db().$queryRaw<{ xmin: string }[]>`
          SELECT xmin::text AS xmin FROM "OutboundBudget" WHERE name = ${where}`
      : await api.db().$queryRaw<{ xmin: string }[]>`
          SELECT xmin::text AS xmin FROM "AuditEntry" WHERE id = ${where}`;
  return rows[0]?.xmin;
}

describe("raising an outbound budget", () => {
  it("POST 200: the raise and its audit entry are one transaction; GET and the list show it", async () => {
    await createBudget("sendgrid");
    const response = await api.call("POST", `${PATH}/sendgrid/raise`, {
      as: operator(),
      body: {
        limit: RAISED_LIMIT,
        concurrencyMax: 8,
        durationMinutes: 120,
        reason: "the provider raised our quota for the day",
      },
    });
    expect(response.status, response.text).toBe(200);
    const raise = response.body.budget.raise;
    expect(raise).toMatchObject({
      limit: RAISED_LIMIT,
      concurrencyMax: 8,
      owner: "operator token",
      reason: "the provider raised our quota for the day",
    });
    expect(Date.parse(raise.expiresAt) - Date.parse(raise.startsAt)).toBe(120 * MINUTE_MS);
    expect(response.body.budget).toMatchObject({ limit: BASE_LIMIT, version: 2 });

    const entry = await api.db().auditEntry.findFirstOrThrow({
      where: { id: BigInt(response.body.auditEntryId) },
    });
    expect(entry).toMatchObject({
      action: "outbound-budget.raise",
      entityType: "outbound-budget",
      entityId: "sendgrid",
      actorType: "token",
      reason: "the provider raised our quota for the day",
      before: { raise: null, version: 1 },
      after: { raise, version: 2 },
      policyVersion: response.body.policyVersion,
    });
    expect(await writerOf("OutboundBudget", "sendgrid")).toBe(
      await writerOf("AuditEntry", entry.id),
    );
    // The published entry carries the raise with its expiry, without owner or reason.
    const stored = await api.db().policyEntry.findFirstOrThrow({
      where: { key: "outbound:sendgrid" },
    });
    expect(JSON.parse(stored.value).raise).toEqual({
      limit: RAISED_LIMIT,
      concurrencyMax: 8,
      startsAt: raise.startsAt,
      expiresAt: raise.expiresAt,
    });

    const read = await api.call("GET", `${PATH}/sendgrid`, { as: viewer() });
    expect(read.body.budget.raise).toEqual(raise);
    const list = await api.call("GET", PATH, { as: viewer() });
    expect(list.body.budgets[0].raise).toEqual(raise);
  });

  it("POST 409 while a raise is current; 404 for no budget; 403 for a viewer; 401 without a token", async () => {
    const body = { concurrencyMax: 6, durationMinutes: 10, reason: "again" };
    const conflict = await refused("POST", `${PATH}/sendgrid/raise`, { as: operator(), body }, 409);
    expect(conflict.message).toMatch(
      /^outbound budget "sendgrid" is already raised until .+ by operator token; revert that raise first\.$/,
    );
    await refused("POST", `${PATH}/ghost/raise`, { as: operator(), body }, 404);
    await refused("POST", `${PATH}/sendgrid/raise`, { as: viewer(), body }, 403);
    await refused("POST", `${PATH}/sendgrid/raise`, { body }, 401);
    await refused(
      "DELETE",
      `${PATH}/sendgrid/raise`,
      { as: viewer(), body: { expectedVersion: 2, reason: "no" } },
      403,
    );
  });

  it("a PUT of the budget keeps its raise", async () => {
    const put = await api.call("PUT", `${PATH}/sendgrid`, {
      as: operator(),
      body: {
        limit: BASE_LIMIT,
        concurrency: { max: 5 },
        expectedVersion: 2,
        reason: "one more slot",
      },
    });
    expect(put.status, put.text).toBe(200);
    expect(put.body.budget.raise).toMatchObject({ concurrencyMax: 8 });
    const withRaise = await refused(
      "PUT",
      `${PATH}/sendgrid`,
      { as: operator(), body: { limit: BASE_LIMIT, expectedVersion: 3, reason: "x", raise: null } },
      400,
    );
    expect(withRaise.fieldErrors).toEqual([
      { path: "raise", message: expect.stringMatching(/unknown field "raise"/) },
    ]);
  });

  it("DELETE 409 on a stale version; 200 reverts it now, audited; then 404: nothing to revert", async () => {
    const stale = await refused(
      "DELETE",
      `${PATH}/sendgrid/raise`,
      { as: operator(), body: { expectedVersion: 2, reason: "stale" } },
      409,
    );
    expect(stale.code).toBe("VERSION_CONFLICT");
    const reverted = await api.call("DELETE", `${PATH}/sendgrid/raise`, {
      as: operator(),
      body: { expectedVersion: 3, reason: "the provider's day is over early" },
    });
    expect(reverted.status, reverted.text).toBe(200);
    expect(reverted.body.budget).toMatchObject({ raise: null, version: 4 });
    const entry = await api.db().auditEntry.findFirstOrThrow({
      where: { id: BigInt(reverted.body.auditEntryId) },
    });
    expect(entry).toMatchObject({
      action: "outbound-budget.revert-raise",
      entityId: "sendgrid",
      reason: "the provider's day is over early",
      before: { raise: { concurrencyMax: 8 }, version: 3 },
      after: { raise: null, version: 4 },
    });
    expect(await writerOf("OutboundBudget", "sendgrid")).toBe(
      await writerOf("AuditEntry", entry.id),
    );
    const stored = await api.db().policyEntry.findFirstOrThrow({
      where: { key: "outbound:sendgrid" },
    });
    expect("raise" in JSON.parse(stored.value)).toBe(false);
    const none = await refused(
      "DELETE",
      `${PATH}/sendgrid/raise`,
      { as: operator(), body: { expectedVersion: 4, reason: "again" } },
      404,
    );
    expect(none.message).toBe(
      'outbound budget "sendgrid" has no current raise (it was never raised, was reverted, or has expired).',
    );
  });

  it("400 beyond the guardrails, naming each field and the guardrail, writing nothing", async () => {
    const cases: { body: Record<string, unknown>; errors: { path: string; message: RegExp }[] }[] =
      [
        {
          body: {
            limit: { algorithm: "token-bucket", capacity: 101, refillPerSec: 10 },
            durationMinutes: 60,
          },
          errors: [
            {
              path: "limit.capacity",
              message:
                /^capacity 101 against 10 in the limit it replaces would raise the limit 10\.1x; the maximum raise is 10x \(guardrails\.maxIncidentFactor\)$/,
            },
          ],
        },
        {
          body: { concurrencyMax: 51, durationMinutes: 60 },
          errors: [
            {
              path: "concurrencyMax",
              message:
                /^concurrencyMax 51 against 5 in the cap it replaces would raise the limit 10\.2x; the maximum raise is 10x \(guardrails\.maxIncidentFactor\)$/,
            },
          ],
        },
        {
          body: { concurrencyMax: 6, durationMinutes: 25 * 60 },
          errors: [
            {
              path: "durationMinutes",
              message:
                /the override would last 25 h; the maximum is 24 h \(guardrails\.maxIncidentDurationMs\)/,
            },
          ],
        },
        {
          body: { concurrencyMax: 6, until: "2020-01-01T00:00:00Z" },
          errors: [{ path: "until", message: /expiresAt must be after startsAt/ }],
        },
      ];
    for (const { body, errors } of cases) {
      const error = await refused(
        "POST",
        `${PATH}/sendgrid/raise`,
        { as: operator(), body: { ...body, reason: "beyond" } },
        400,
      );
      expect(error.fieldErrors.length, JSON.stringify(error)).toBe(errors.length);
      errors.forEach((want, index) => {
        expect(error.fieldErrors[index].path).toBe(want.path);
        expect(error.fieldErrors[index].message).toMatch(want.message);
      });
    }
  });

  it("400 for hostile input names the field and writes nothing", async () => {
    const cases: { body: Record<string, unknown>; path: string; message: RegExp }[] = [
      {
        body: { concurrencyMax: 6 },
        path: "until",
        message: /give either until .* or durationMinutes/,
      },
      {
        body: { concurrencyMax: 6, durationMinutes: 5, until: "2030-01-01T00:00:00Z" },
        path: "until",
        message: /give either until/,
      },
      { body: { durationMinutes: 5 }, path: "limit", message: /give a limit, a concurrencyMax/ },
      {
        body: { concurrencyMax: 6, durationMinutes: 0 },
        path: "durationMinutes",
        message: /at least 1/,
      },
      {
        body: { concurrencyMax: 6, durationMinutes: 1.5 },
        path: "durationMinutes",
        message: /whole number/,
      },
      {
        body: { concurrencyMax: 6, durationMinutes: "soon" },
        path: "durationMinutes",
        message: /number of minutes/,
      },
      { body: { concurrencyMax: 6, until: "tomorrow" }, path: "until", message: /ISO 8601/ },
      {
        body: { concurrencyMax: 0, durationMinutes: 5 },
        path: "concurrencyMax",
        message: /at least 1/,
      },
      {
        body: { concurrencyMax: 1e12, durationMinutes: 5 },
        path: "concurrencyMax",
        message: /at most 1000000/,
      },
      {
        body: { limit: { algorithm: "leaky" }, durationMinutes: 5 },
        path: "limit.algorithm",
        message: /algorithm must be one of/,
      },
      {
        body: { concurrencyMax: 6, durationMinutes: 5, reason: "" },
        path: "reason",
        message: /reason must not be empty/,
      },
      {
        body: { concurrencyMax: 6, durationMinutes: 5, reason: "line\nbreak" },
        path: "reason",
        message: /control characters/,
      },
      {
        body: { concurrencyMax: 6, durationMinutes: 5, reason: "x".repeat(5_000) },
        path: "reason",
        message: /at most 1000 characters/,
      },
      {
        body: { concurrencyMax: 6, durationMinutes: 5, owner: "me" },
        path: "owner",
        message: /unknown field "owner"/,
      },
    ];
    for (const { body, path, message } of cases) {
      const error = await refused(
        "POST",
        `${PATH}/sendgrid/raise`,
        { as: operator(), body: { reason: "hostile", ...body } },
        400,
      );
      const found = error.fieldErrors.find(
        (item: { path: string; message: string }) =>
          item.path === path && message.test(item.message),
      );
      expect(found, `${JSON.stringify(body).slice(0, 80)}: ${JSON.stringify(error)}`).toBeDefined();
    }
    // A budget without a cap has no cap to raise; a name that is not one is refused by field.
    const noCap = await api.call("POST", PATH, {
      as: operator(),
      body: { name: "crawler", limit: BASE_LIMIT, reason: "a crawler" },
    });
    expect(noCap.status, noCap.text).toBe(201);
    const capless = await refused(
      "POST",
      `${PATH}/crawler/raise`,
      { as: operator(), body: { concurrencyMax: 5, durationMinutes: 5, reason: "more" } },
      400,
    );
    expect(capless.fieldErrors).toEqual([
      {
        path: "concurrencyMax",
        message: "this budget has no concurrency cap to raise; raise its limit instead",
      },
    ]);
    const badName = await refused(
      "POST",
      `${PATH}/${encodeURIComponent("Bad Name")}/raise`,
      { as: operator(), body: { concurrencyMax: 5, durationMinutes: 5, reason: "more" } },
      400,
    );
    expect(badName.fieldErrors[0].path).toBe("params.name");
    await refused(
      "POST",
      `${PATH}/sendgrid/raise`,
      { as: operator(), rawBody: '{"concurrencyMax": 6, "durationMinutes":' },
      400,
    );
  });

  it("a raise expires by itself: its expiry is recorded once by the system, and a new raise may follow", async () => {
    const raised = await api.call("POST", `${PATH}/sendgrid/raise`, {
      as: operator(),
      body: { concurrencyMax: 7, durationMinutes: 30, reason: "for half an hour" },
    });
    expect(raised.status, raised.text).toBe(200);
    expect(await recordOutboundRaiseExpiries(harnessDeps())).toEqual([]);

    api.advanceClock(31 * MINUTE_MS);
    // Past its expiry it is no longer current: nothing to revert.
    await refused(
      "DELETE",
      `${PATH}/sendgrid/raise`,
      { as: operator(), body: { expectedVersion: raised.body.budget.version, reason: "late" } },
      404,
    );
    expect(await recordOutboundRaiseExpiries(harnessDeps())).toEqual(["sendgrid"]);
    expect(await recordOutboundRaiseExpiries(harnessDeps())).toEqual([]);
    const expiries = await api.db().auditEntry.findMany({
      where: { action: "outbound-budget.expire-raise", entityId: "sendgrid" },
    });
    expect(expiries).toHaveLength(1);
    expect(expiries[0]).toMatchObject({
      actorType: "system",
      actorName: "outbound raise expiry",
      reason: `the raise of outbound budget sendgrid reached its expiry at ${raised.body.budget.raise.expiresAt}`,
      before: { raise: { concurrencyMax: 7 } },
      after: { raise: null },
    });
    const read = await api.call("GET", `${PATH}/sendgrid`, { as: viewer() });
    expect(read.body.budget.raise).toBeNull();

    // A raise that expired unrecorded is recorded when the next raise is made, before it.
    const short = await api.call("POST", `${PATH}/sendgrid/raise`, {
      as: operator(),
      body: { concurrencyMax: 6, durationMinutes: 1, reason: "one minute" },
    });
    expect(short.status, short.text).toBe(200);
    api.advanceClock(2 * MINUTE_MS);
    const next = await api.call("POST", `${PATH}/sendgrid/raise`, {
      as: operator(),
      body: { concurrencyMax: 9, durationMinutes: 60, reason: "the next day's quota" },
    });
    expect(next.status, next.text).toBe(200);
    const actions = await api.db().auditEntry.findMany({
      where: {
        entityType: "outbound-budget",
        entityId: "sendgrid",
        id: { gt: BigInt(short.body.auditEntryId) },
      },
      orderBy: { id: "asc" },
      select: { action: true },
    });
    expect(actions.map((row) => row.action)).toEqual([
      "outbound-budget.expire-raise",
      "outbound-budget.raise",
    ]);
  });
});

describe("a raise reaching a running enforcer", () => {
  const redisUrl = inject("redisUrl");
  const redis = createRedisClient("control", { url: redisUrl });
  let enforcer: Enforcer | undefined;

  afterAll(async () => {
    await enforcer?.stop();
    redis.disconnect();
  });

  it("is published with its expiry and applied by a limiter following the enforcer; a revert ends it", async () => {
    const prefix = `${inject("redisKeyPrefix")}${randomBytes(3).toString("hex")}:`;
    const db = api.db();
    installDeps({
      control: { db, publisher: { db, redis, prefix, clock: systemClock }, clock: systemClock },
    });
    const created = await api.call("POST", PATH, {
      as: operator(),
      body: {
        name: "partner-api",
        limit: { algorithm: "fixed-window", limit: 2, windowMs: 3_600_000 },
        maxWaitMs: 0,
        reason: "two calls an hour",
      },
    });
    expect(created.status, created.text).toBe(201);
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
    const scope = "outbound:partner-api";
    try {
      const raised = await api.call("POST", `${PATH}/partner-api/raise`, {
        as: operator(),
        body: {
          limit: { algorithm: "fixed-window", limit: 5, windowMs: 3_600_000 },
          durationMinutes: 60,
          reason: "the partner raised our quota for the hour",
        },
      });
      expect(raised.status, raised.text).toBe(200);
      expect(raised.body.published).toBe(true);
      await expect
        .poll(() => running.outboundBudget("partner-api")?.raise?.expiresAt, { timeout: 20_000 })
        .toBe(raised.body.budget.raise.expiresAt);
      expect(limiter.budgetOf(scope).limit).toMatchObject({ limit: 5 });
      // Five calls go at once under the raise; the sixth waits past its wait of 0 ms.
      for (let call = 0; call < 5; call++) await limiter.acquire(scope, { maxWaitMs: 0 });
      await expect(limiter.acquire(scope, { maxWaitMs: 0 })).rejects.toMatchObject({
        code: "max-wait",
      });

      const reverted = await api.call("DELETE", `${PATH}/partner-api/raise`, {
        as: operator(),
        body: { expectedVersion: raised.body.budget.version, reason: "back to the base" },
      });
      expect(reverted.status, reverted.text).toBe(200);
      await expect
        .poll(() => running.outboundBudget("partner-api")?.raise, { timeout: 20_000 })
        .toBeUndefined();
      expect(limiter.budgetOf(scope).limit).toMatchObject({ limit: 2 });
    } finally {
      limiter.close();
    }
  });
});
