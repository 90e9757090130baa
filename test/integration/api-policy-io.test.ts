/**
 * The policy as a whole through the API: the current snapshot, export (stable, canonical) and
 * import (validated whole, reported by position, written as one change or not at all), explain
 * with live state from a peek, and the audit log's filters and keyset pages.
 */

import { type LimitCheck, RedisStore } from "@limitplane/enforcer/limiter";
import { canonicalJson, EntrySetSum, entryDigestHex } from "@limitplane/enforcer/policy";
import type { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { installDeps } from "@/lib/server/composition";
import { createRedis } from "@/lib/server/redis";
import { fingerprint, provideApiHarness } from "./helpers/api-harness";
import { uniqueName } from "./helpers/policy-fixtures";
import { provideTestDatabase } from "./helpers/test-database";

const api = provideApiHarness();
const empty = provideTestDatabase();
const admin = () => ({ token: api.as("admin").token });
const viewer = () => ({ token: api.as("viewer").token });

let redis: Redis;
beforeAll(() => {
  redis = createRedis("control", { url: inject("redisUrl") });
});
afterAll(() => redis.disconnect());

/** Runs `body` with the policy services pointed at the empty database (auth stays on the harness's). */
async function onEmptyDatabase<T>(body: () => Promise<T>): Promise<T> {
  const { db } = empty.current();
  installDeps({ control: { db, publisher: null, clock: { nowMs: api.nowMs } } });
  try {
    return await body();
  } finally {
    installDeps({ control: { db: api.db(), publisher: null, clock: { nowMs: api.nowMs } } });
  }
}

describe("GET /api/v1/policy/snapshot", () => {
  it("200: the latest version, its checksum and its entries, a page at a time", async () => {
    const response = await api.call("GET", "/api/v1/policy/snapshot?limit=3", { as: viewer() });
    expect(response.status).toBe(200);
    const latest = await api.db().policyVersion.findFirstOrThrow({ orderBy: { version: "desc" } });
    expect(response.body).toMatchObject({
      version: latest.version,
      checksum: latest.checksum,
      entries: latest.entries,
    });
    expect(response.body.items).toHaveLength(3);
    expect(response.body.nextCursor).toBe(response.body.items[2].key);
    // Every page after the first, to the end: each entry once, in key order, adding up to the
    // version's checksum.
    const keys: string[] = response.body.items.map((item: { key: string }) => item.key);
    const sum = new EntrySetSum();
    for (const item of response.body.items)
      sum.add(entryDigestHex(item.key, canonicalJson(item.value)));
    let cursor: string | null = response.body.nextCursor;
    while (cursor !== null) {
      const page = await api.call(
        "GET",
        `/api/v1/policy/snapshot?limit=5000&after=${encodeURIComponent(cursor)}`,
        { as: viewer() },
      );
      expect(page.status).toBe(200);
      for (const item of page.body.items) {
        keys.push(item.key);
        sum.add(entryDigestHex(item.key, canonicalJson(item.value)));
      }
      cursor = page.body.nextCursor;
    }
    expect(keys).toHaveLength(latest.entries ?? -1);
    expect([...keys].sort()).toEqual(keys);
    expect(sum.hex).toBe(latest.checksum);
  });

  it("400 for an unknown parameter or a limit out of range", async () => {
    const unknown = await api.call("GET", "/api/v1/policy/snapshot?page=2", { as: viewer() });
    expect(unknown.status).toBe(400);
    expect(unknown.body.error.fieldErrors).toEqual([
      { path: "query.page", message: expect.stringContaining("expected only: after, limit") },
    ]);
    const tooMany = await api.call("GET", "/api/v1/policy/snapshot?limit=5001", { as: viewer() });
    expect(tooMany.status).toBe(400);
    expect(tooMany.body.error.fieldErrors).toEqual([
      { path: "query.limit", message: "limit must be at most 5000" },
    ]);
  });

  it("409 before there is any policy", async () => {
    const response = await onEmptyDatabase(() =>
      api.call("GET", "/api/v1/policy/snapshot", { as: viewer() }),
    );
    expect(response.status).toBe(409);
    expect(response.body.error.message).toMatch(/no policy yet/);
  });
});

describe("export and import", () => {
  it("export is canonical text, identical twice, with its version in a header", async () => {
    const first = await api.call("GET", "/api/v1/policy/export", { as: viewer() });
    const second = await api.call("GET", "/api/v1/policy/export", { as: viewer() });
    expect(first.status).toBe(200);
    expect(first.headers.get("content-type")).toBe("application/json; charset=utf-8");
    expect(first.headers.get("x-policy-version")).toMatch(/^\d+$/);
    expect(first.text).toBe(second.text);
    expect(first.text).toMatch(/^\{\n {2}"schemaVersion": 1,\n/);
    expect(JSON.parse(first.text).tiers.map((tier: { name: string }) => tier.name)).toEqual([
      "enterprise",
      "free",
      "pro",
    ]);
  });

  it("export then import into an empty database reproduces the same policy, byte for byte", async () => {
    const exported = await api.call("GET", "/api/v1/policy/export", { as: viewer() });
    const { imported, reexported } = await onEmptyDatabase(async () => {
      const imported = await api.call(
        "POST",
        "/api/v1/policy/import?reason=restore%20from%20backup",
        { as: admin(), rawBody: exported.text },
      );
      const reexported = await api.call("GET", "/api/v1/policy/export", { as: viewer() });
      return { imported, reexported };
    });
    expect(imported.status, imported.text).toBe(200);
    expect(imported.body).toMatchObject({
      policyVersion: 1,
      summary: { tiers: ["enterprise", "free", "pro"], customers: 4 },
    });
    expect(reexported.text).toBe(exported.text);
    const entries = await empty.current().db.auditEntry.findMany();
    expect(entries).toEqual([
      expect.objectContaining({
        action: "policy.import",
        actorType: "token",
        actorId: api.as("admin").tokenId,
        reason: "restore from backup",
      }),
    ]);
  });

  it("400 for an exported document with an extra top-level field; nothing written", async () => {
    const exported = await api.call("GET", "/api/v1/policy/export", { as: viewer() });
    const document = { ...JSON.parse(exported.text), reason: 1 };
    const before = await api.fingerprint();
    const response = await api.call("POST", "/api/v1/policy/import?reason=extra%20field", {
      as: admin(),
      body: document,
    });
    expect(response.status, response.text).toBe(400);
    expect(response.body.error).toMatchObject({
      code: "VALIDATION_FAILED",
      fieldErrors: [
        {
          path: "reason",
          message: expect.stringContaining('unknown field "reason"; expected only: schemaVersion'),
        },
      ],
      requestId: expect.any(String),
    });
    expect(await api.fingerprint()).toEqual(before);
  });

  it("200 with isNoChange for a re-import of the policy in force: no audit entry, no version, nothing written", async () => {
    const exported = await api.call("GET", "/api/v1/policy/export", { as: viewer() });
    const before = await api.fingerprint();
    const response = await api.call("POST", "/api/v1/policy/import?reason=same%20again", {
      as: admin(),
      rawBody: exported.text,
    });
    expect(response.status, response.text).toBe(200);
    expect(response.body).toEqual({
      summary: expect.objectContaining({ tiers: ["enterprise", "free", "pro"] }),
      auditEntryId: null,
      policyVersion: null,
      published: false,
      isNoChange: true,
    });
    expect(await api.fingerprint()).toEqual(before);
  });

  it("a file with one invalid entry among many writes nothing and names its position and field", async () => {
    const exported = await api.call("GET", "/api/v1/policy/export", { as: viewer() });
    const document = JSON.parse(exported.text);
    for (let index = 0; index < 40; index++) {
      document.customers.push({ id: `bulk-${index}`, displayName: `Bulk ${index}`, tier: "free" });
    }
    document.customers[30].tier = "platinum";
    const before = await fingerprint(empty.current().db);
    const response = await onEmptyDatabase(() =>
      api.call("POST", "/api/v1/policy/import?reason=bulk%20load", {
        as: admin(),
        body: document,
      }),
    );
    expect(response.status).toBe(400);
    expect(response.body.error.code).toBe("VALIDATION_FAILED");
    expect(response.body.error.fieldErrors).toEqual([
      { path: "customers[30].tier", message: expect.stringContaining("platinum") },
    ]);
    expect(await fingerprint(empty.current().db)).toEqual(before);
  });

  it("400 without a reason or with malformed JSON; 403 for an operator; nothing written", async () => {
    const exported = await api.call("GET", "/api/v1/policy/export", { as: viewer() });
    const before = await api.fingerprint();
    const noReason = await api.call("POST", "/api/v1/policy/import", {
      as: admin(),
      rawBody: exported.text,
    });
    expect(noReason.status).toBe(400);
    expect(noReason.body.error.fieldErrors).toEqual([
      { path: "query.reason", message: "reason is required" },
    ]);
    const malformed = await api.call("POST", "/api/v1/policy/import?reason=r", {
      as: admin(),
      rawBody: exported.text.slice(0, -10),
    });
    expect(malformed.status).toBe(400);
    expect(malformed.body.error.code).toBe("MALFORMED_JSON");
    const forbidden = await api.call("POST", "/api/v1/policy/import?reason=r", {
      as: { token: api.as("operator").token },
      rawBody: exported.text,
    });
    expect(forbidden.status).toBe(403);
    expect(await api.fingerprint()).toEqual(before);
  });
});

describe("GET /api/v1/explain", () => {
  async function explain(query: string) {
    const response = await api.call("GET", `/api/v1/explain?${query}`, { as: viewer() });
    expect(response.status, response.text).toBe(200);
    return response.body;
  }

  it("the trace for a customer uses its registry tier and names the rule deciding each layer", async () => {
    const body = await explain("customerId=globex&endpointClass=reports");
    expect(body).toMatchObject({
      subject: "c:globex",
      registryTier: "pro",
      tier: "pro",
      endpointClass: "reports",
    });
    const endpoint = body.trace.slots.find((slot: { layer: string }) => slot.layer === "endpoint");
    expect(endpoint.rules).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ scope: "customer:globex/endpoint:reports", status: "applies" }),
      ]),
    );
    expect(body.explanation[0]).toMatch(/^subject c:globex at /);
    expect(body.liveError).toBeNull();
  });

  it("matches a method and path; an anonymous request is keyed by its address", async () => {
    const body = await explain("method=post&path=/v1/auth/sign-in&clientAddress=203.0.113.7");
    expect(body).toMatchObject({
      subjectKind: "address",
      endpointClass: "sign-in",
      trace: {
        endpointClass: { via: "match", rule: { method: "POST", path: "/v1/auth/sign-in" } },
      },
    });
  });

  it("shows each limit's live state from the shared store, and peeking consumes nothing", async () => {
    const customerId = uniqueName("live");
    const admin = { token: api.as("admin").token };
    await api.call("POST", "/api/v1/customers", {
      as: admin,
      body: { id: customerId, displayName: "Live Ltd", tier: "free", reason: "explain test" },
    });
    await api.call("POST", `/api/v1/customers/${customerId}/overrides`, {
      as: admin,
      body: {
        endpointClass: null,
        limit: { algorithm: "fixed-window", limit: 100, windowMs: 3_600_000 },
        reason: "a window that does not refill during the test",
      },
    });
    const query = `customerId=${customerId}&endpointClass=default`;
    const fresh = await explain(query);
    const account = (body: typeof fresh) =>
      body.checks.find((check: { bucket: string }) => check.bucket === "account");
    expect(account(fresh)).toMatchObject({
      scope: `customer:${customerId}`,
      live: { allowed: true, limit: 100, remaining: 100 - fresh.cost },
    });

    // An enforcer sharing the Redis (same key prefix) admits three requests.
    const enforcer = new RedisStore({ client: redis, keyPrefix: inject("redisKeyPrefix") });
    const checks: LimitCheck[] = fresh.checks.map((check: LimitCheck & { bucket: string }) => ({
      scope: check.scope,
      bucket: check.bucket,
      limit: check.limit,
      mode: check.mode,
    }));
    for (let request = 0; request < 3; request++) {
      const decision = await enforcer.decide({ subject: fresh.subject, checks, cost: fresh.cost });
      expect(decision.allowed).toBe(true);
    }
    const after = await explain(query);
    expect(account(after).live.remaining).toBe(100 - 4 * fresh.cost);
    const again = await explain(query);
    expect(account(again).live.remaining).toBe(account(after).live.remaining);
    expect(after.decision).toMatchObject({ allowed: true });
  });

  it("400 for a malformed customer id or an unknown parameter", async () => {
    for (const query of ["customerId=has%20space", "customer=acme", "method=G%20ET"]) {
      const response = await api.call("GET", `/api/v1/explain?${query}`, { as: viewer() });
      expect(response.status, query).toBe(400);
    }
  });
});

describe("GET /api/v1/audit", () => {
  it("filters by actor, action, entity, customer and time range, and pages by cursor", async () => {
    const operatorId = api.as("operator").operatorId;
    const session = { session: api.as("operator").session };
    const id = uniqueName("audited");
    const startedAt = new Date(Date.now() - 1_000).toISOString();
    await api.call("POST", "/api/v1/customers", {
      as: session,
      body: { id, displayName: "Audited", tier: "free", reason: "audit test 1" },
    });
    for (const tier of ["pro", "free", "enterprise"]) {
      const current = await api.call("GET", `/api/v1/customers/${id}`, { as: session });
      const response = await api.call("PATCH", `/api/v1/customers/${id}`, {
        as: session,
        body: { expectedVersion: current.body.customer.version, tier, reason: `to ${tier}` },
      });
      expect(response.status).toBe(200);
    }
    const read = (query: string) => api.call("GET", `/api/v1/audit?${query}`, { as: viewer() });

    const byCustomer = await read(`customerId=${id}`);
    expect(byCustomer.status).toBe(200);
    expect(byCustomer.body.entries.map((e: { reason: string }) => e.reason)).toEqual([
      "to enterprise",
      "to free",
      "to pro",
      "audit test 1",
    ]);
    const byActor = await read(`actorId=${operatorId}&action=customer.update&customerId=${id}`);
    expect(byActor.body.entries).toHaveLength(3);
    expect(byActor.body.entries[0]).toMatchObject({
      actor: { type: "operator", id: operatorId, name: "Operator Person" },
      before: { tier: "free" },
      after: { tier: "enterprise" },
    });
    const byEntity = await read(`entityType=customer&entityId=${id}&from=${startedAt}`);
    expect(byEntity.body.entries).toHaveLength(4);
    const future = await read(
      `customerId=${id}&from=${new Date(Date.now() + 60_000).toISOString()}`,
    );
    expect(future.body.entries).toEqual([]);

    const page1 = await read(`customerId=${id}&limit=3`);
    expect(page1.body.entries).toHaveLength(3);
    const page2 = await read(`customerId=${id}&limit=3&cursor=${page1.body.nextCursor}`);
    expect(page2.body.entries.map((e: { reason: string }) => e.reason)).toEqual(["audit test 1"]);
    expect(page2.body.nextCursor).toBeNull();
    expect(page1.body.previousCursor).toBeNull();
    // Back from the older page: the newer entries again, newest first.
    const back = await read(
      `customerId=${id}&limit=3&before=${encodeURIComponent(page2.body.previousCursor)}`,
    );
    expect(back.status).toBe(200);
    expect(back.body.entries.map((e: { reason: string }) => e.reason)).toEqual([
      "to enterprise",
      "to free",
      "to pro",
    ]);
    expect(back.body.previousCursor).toBeNull();
  });

  it("400 for a cursor it did not issue, an unknown action, or entityId without entityType", async () => {
    for (const query of [
      "cursor=bogus",
      "before=bogus",
      "action=tier.explode",
      "entityId=x",
      "limit=500",
      "from=yesterday",
    ]) {
      const response = await api.call("GET", `/api/v1/audit?${query}`, { as: viewer() });
      expect(response.status, query).toBe(400);
      expect(response.body.error.fieldErrors.length, query).toBeGreaterThan(0);
    }
  });
});

describe("GET /api/v1/policy/propagation", () => {
  afterAll(() => {
    installDeps({ propagation: { db: api.db(), regions: [] } });
  });

  it("200: each region's state for a version, the latest by default", async () => {
    const db = api.db();
    const latest = await db.policyVersion.findFirstOrThrow({ orderBy: { version: "desc" } });
    const [applied, pending] = [uniqueName("eu"), uniqueName("us")];
    await db.regionPublication.createMany({
      data: [
        { region: applied, publishedVersion: latest.version },
        {
          region: pending,
          publishedVersion: latest.version - 1,
          lastError: "connect ECONNREFUSED",
        },
      ],
    });
    installDeps({ propagation: { db, regions: [applied, pending] } });
    const response = await api.call("GET", "/api/v1/policy/propagation", { as: viewer() });
    expect(response.status).toBe(200);
    expect(response.body).toEqual({
      version: latest.version,
      createdAt: latest.createdAt.toISOString(),
      regions: [
        { region: applied, isApplied: true, publishedVersion: latest.version, lastError: null },
        {
          region: pending,
          isApplied: false,
          publishedVersion: latest.version - 1,
          lastError: "connect ECONNREFUSED",
        },
      ],
    });
    const older = await api.call(
      "GET",
      `/api/v1/policy/propagation?version=${latest.version - 1}`,
      { as: viewer() },
    );
    expect(older.body.regions.map((entry: { isApplied: boolean }) => entry.isApplied)).toEqual([
      true,
      true,
    ]);
  });

  it("400 for a version that is not a positive whole number, 404 for one that does not exist", async () => {
    const bad = await api.call("GET", "/api/v1/policy/propagation?version=0", { as: viewer() });
    expect(bad.status).toBe(400);
    expect(bad.body.error.fieldErrors).toEqual([
      { path: "query.version", message: "version must be at least 1" },
    ]);
    const missing = await api.call("GET", "/api/v1/policy/propagation?version=99999999", {
      as: viewer(),
    });
    expect(missing.status).toBe(404);
    expect(missing.body.error.message).toBe('Policy version "99999999" does not exist.');
  });

  it("401 without credentials", async () => {
    const response = await api.call("GET", "/api/v1/policy/propagation");
    expect(response.status).toBe(401);
  });
});
