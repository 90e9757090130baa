import { resolveLimits, type TSnapshot } from "@limitplane/enforcer/policy";
import { beforeAll, describe, expect, it } from "vitest";
import { summarizeAuditEntry } from "@/lib/control/audit/summarize-audit-entry";
import { createCustomer } from "@/lib/control/customer/create-customer";
import type { ControlDeps } from "@/lib/control/deps";
import { extendIncident } from "@/lib/control/incident/extend-incident";
import { getIncident } from "@/lib/control/incident/get-incident";
import { listIncidents, listIncidentsPage } from "@/lib/control/incident/list-incidents";
import { raiseIncident } from "@/lib/control/incident/raise-incident";
import { recordIncidentExpiries } from "@/lib/control/incident/record-incident-expiries";
import { revertIncident } from "@/lib/control/incident/revert-incident";
import { createTier } from "@/lib/control/tier/create-tier";
import {
  countEverything,
  depsFor,
  expectOneAuditEntry,
  expectRefusedWithoutWrites,
  importExamplePolicy,
  latestAuditEntries,
  latestSnapshot,
  operatorContext,
  uniqueName,
} from "./helpers/policy-fixtures";
import { provideTestDatabase } from "./helpers/test-database";

const HOUR_MS = 3_600_000;
const database = provideTestDatabase();
let deps: ControlDeps;

beforeAll(async () => {
  deps = depsFor(database.current().db);
  await importExamplePolicy(deps);
});

async function proCustomer(): Promise<string> {
  const id = uniqueName("inc-cust");
  await createCustomer({ id, displayName: "Incident test", tier: "pro" }, operatorContext(), deps);
  return id;
}

function accountCheck(snapshot: TSnapshot, customerId: string, nowMs: number) {
  const checks = resolveLimits(
    snapshot,
    { customerId, tier: "pro", endpointClass: "default" },
    nowMs,
  ).checks;
  const account = checks.find((check) => check.bucket === "account");
  return account === undefined ? null : { scope: account.scope, limit: account.limit };
}

describe("raiseIncident", () => {
  it("raises a customer's limit by a factor, audited, compiled and applied at once", async () => {
    const { db } = database.current();
    const customerId = await proCustomer();
    const { result, entry } = await expectOneAuditEntry(db, () =>
      raiseIncident(
        {
          customerId,
          factor: 2,
          durationMs: 2 * HOUR_MS,
          ticketUrl: "https://tickets.example/INC-1",
        },
        operatorContext("backfill after their outage"),
        deps,
      ),
    );
    const { incident } = result;
    expect(incident).toMatchObject({
      customerId,
      endpointClass: null,
      factor: 2,
      limit: null,
      owner: "Dana Operator",
      reason: "backfill after their outage",
      createdBy: "Dana Operator",
      ticketUrl: "https://tickets.example/INC-1",
      revokedAt: null,
      version: 1,
    });
    expect(Date.parse(incident.expiresAt) - Date.parse(incident.startsAt)).toBe(2 * HOUR_MS);
    expect(entry).toMatchObject({
      action: "incident.raise",
      entityType: "incident",
      entityId: incident.id,
      customerId,
      before: null,
      after: { id: incident.id, factor: 2, version: 1 },
      policyVersion: result.policyVersion,
    });
    const snapshot = await latestSnapshot(db);
    expect(accountCheck(snapshot, customerId, Date.now())).toEqual({
      scope: `incident:${incident.id}`,
      limit: { algorithm: "token-bucket", capacity: 400, refillPerSec: 200 },
    });
    expect(await getIncident(incident.id, deps)).toMatchObject({
      id: incident.id,
      state: "active",
    });
  });

  it("a future incident is stored and compiled, and applies only from its start", async () => {
    const { db } = database.current();
    const customerId = await proCustomer();
    const startsAtMs = Date.now() + HOUR_MS;
    const { incident } = await raiseIncident(
      {
        customerId,
        limit: { algorithm: "token-bucket", capacity: 100, refillPerSec: 50 },
        startsAt: new Date(startsAtMs).toISOString(),
        durationMs: HOUR_MS,
      },
      operatorContext("planned migration"),
      deps,
    );
    const snapshot = await latestSnapshot(db);
    expect(snapshot.policy.incidentOverrides.map((item) => item.id)).toContain(incident.id);
    expect(accountCheck(snapshot, customerId, Date.now())?.scope).toBe("tier:pro");
    expect(accountCheck(snapshot, customerId, startsAtMs)?.scope).toBe(`incident:${incident.id}`);
    expect((await listIncidents({ customerId }, deps)).map((item) => item.state)).toEqual([
      "upcoming",
    ]);
  });

  it("an incident that has expired stops applying by the clock, and the next compile leaves it out", async () => {
    const { db } = database.current();
    const customerId = await proCustomer();
    const twoHoursAgo = Date.now() - 2 * HOUR_MS;
    const { incident, policyVersion } = await raiseIncident(
      { customerId, factor: 3, durationMs: HOUR_MS },
      operatorContext(),
      depsFor(db, () => twoHoursAgo),
    );
    const compiledWithIt = await latestSnapshot(db);
    expect(compiledWithIt.version).toBe(policyVersion);
    expect(compiledWithIt.policy.incidentOverrides.map((item) => item.id)).toContain(incident.id);
    expect(accountCheck(compiledWithIt, customerId, Date.now())?.scope).toBe("tier:pro");

    await createTier(
      {
        name: uniqueName("later"),
        limit: { algorithm: "token-bucket", capacity: 100, refillPerSec: 10 },
      },
      operatorContext(),
      deps,
    );
    const next = await latestSnapshot(db);
    expect(next.policy.incidentOverrides.map((item) => item.id)).not.toContain(incident.id);
  });

  it.each([
    {
      name: "a factor beyond the guardrail",
      options: { factor: 20, durationMs: HOUR_MS },
      field: "factor",
      message:
        "factor 20 would raise the limit 20x; the maximum raise is 10x (guardrails.maxIncidentFactor)",
    },
    {
      name: "a duration beyond the guardrail",
      options: { factor: 2, durationMs: 30 * HOUR_MS },
      field: "expiresAt",
      message:
        "the override would last 30 h; the maximum is 24 h (guardrails.maxIncidentDurationMs)",
    },
    {
      name: "an absolute limit beyond the guardrail",
      options: {
        limit: { algorithm: "token-bucket" as const, capacity: 5000, refillPerSec: 100 },
        durationMs: HOUR_MS,
      },
      field: "limit.capacity",
      message:
        "capacity 5000 against 200 in the limit it replaces would raise the limit 25x; the maximum raise is 10x (guardrails.maxIncidentFactor)",
    },
    {
      name: "both a factor and a limit",
      options: {
        factor: 2,
        limit: { algorithm: "token-bucket" as const, capacity: 300, refillPerSec: 100 },
        durationMs: HOUR_MS,
      },
      field: "limit",
      message: "give either a factor or an absolute limit, not both",
    },
    {
      name: "an expiry already past",
      options: {
        factor: 2,
        startsAt: new Date(Date.now() - 2 * HOUR_MS).toISOString(),
        durationMs: HOUR_MS,
      },
      field: "expiresAt",
      message: "expiresAt is already past; choose a future instant",
    },
    {
      name: "neither an expiry nor a duration",
      options: { factor: 2 },
      field: "expiresAt",
      message: "give either expiresAt or durationMs (how long from startsAt)",
    },
    {
      name: "a factor on a layer with no enforced limit to scale",
      options: { factor: 2, endpointClass: "default", durationMs: HOUR_MS },
      field: "factor",
      message:
        "there is no enforced limit here for a factor to scale; give an absolute limit instead",
    },
  ])("refuses $name at its field, writing nothing", async ({ options, field, message }) => {
    const customerId = await proCustomer();
    const error = await expectRefusedWithoutWrites(database.current().db, () =>
      raiseIncident({ customerId, ...options }, operatorContext(), deps),
    );
    expect(error.code).toBe("VALIDATION_FAILED");
    expect(error.fieldErrors).toEqual([{ path: field, message }]);
  });

  it("refuses an overlap with a current incident on the same layer, an unknown customer and a taken id", async () => {
    const { db } = database.current();
    const customerId = await proCustomer();
    const { incident } = await raiseIncident(
      { customerId, factor: 2, durationMs: HOUR_MS },
      operatorContext(),
      deps,
    );
    const overlap = await expectRefusedWithoutWrites(db, () =>
      raiseIncident({ customerId, factor: 3, durationMs: HOUR_MS }, operatorContext(), deps),
    );
    expect(overlap.fieldErrors).toEqual([
      {
        path: "startsAt",
        message: expect.stringContaining(`overlaps incident "${incident.id}"`),
      },
    ]);
    const unknown = await expectRefusedWithoutWrites(db, () =>
      raiseIncident(
        { customerId: "nobody", factor: 2, durationMs: HOUR_MS },
        operatorContext(),
        deps,
      ),
    );
    expect(unknown.code).toBe("NOT_FOUND");
    const taken = await expectRefusedWithoutWrites(db, () =>
      raiseIncident(
        { id: incident.id, customerId, endpointClass: "reports", factor: 2, durationMs: HOUR_MS },
        operatorContext(),
        deps,
      ),
    );
    expect(taken.code).toBe("CONFLICT");
  });
});

/** Tier pro's account limit, and twice it: what a ×2 incident on a pro customer replaces and sets. */
const PRO_TIMES_TWO = {
  before: { algorithm: "token-bucket", capacity: 200, refillPerSec: 100 },
  after: { algorithm: "token-bucket", capacity: 400, refillPerSec: 200 },
};

function sentenceOf(entry: {
  action: string;
  entityType: string;
  entityId: string;
  customerId: string | null;
  before: unknown;
  after: unknown;
}): string {
  return summarizeAuditEntry(entry);
}

describe("extendIncident and revertIncident", () => {
  it("extend moves the expiry, re-checking the maximum duration from the start", async () => {
    const { db } = database.current();
    const customerId = await proCustomer();
    const { incident } = await raiseIncident(
      { customerId, factor: 2, durationMs: 20 * HOUR_MS },
      operatorContext(),
      deps,
    );
    const { result, entry } = await expectOneAuditEntry(db, () =>
      extendIncident(
        { id: incident.id, expectedVersion: 1, durationMs: 23 * HOUR_MS },
        operatorContext("still draining"),
        deps,
      ),
    );
    expect(Date.parse(result.incident.expiresAt) - Date.parse(result.incident.startsAt)).toBe(
      23 * HOUR_MS,
    );
    expect(entry).toMatchObject({
      action: "incident.extend",
      customerId,
      before: { expiresAt: incident.expiresAt, version: 1 },
      after: { expiresAt: result.incident.expiresAt, version: 2, effect: PRO_TIMES_TWO },
    });
    // The sentence states the numbers, as the raise's does.
    expect(sentenceOf(entry)).toMatch(
      new RegExp(
        `^${customerId}, all endpoints: 100/s, bursts of 200 → 200/s, bursts of 400 extended, until .+ → .+$`,
      ),
    );
    const tooLong = await expectRefusedWithoutWrites(db, () =>
      extendIncident(
        { id: incident.id, expectedVersion: 2, durationMs: 25 * HOUR_MS },
        operatorContext(),
        deps,
      ),
    );
    expect(tooLong.fieldErrors).toEqual([
      {
        path: "expiresAt",
        message:
          "the override would last 25 h; the maximum is 24 h (guardrails.maxIncidentDurationMs)",
      },
    ]);
    const sooner = await expectRefusedWithoutWrites(db, () =>
      extendIncident(
        { id: incident.id, expectedVersion: 2, durationMs: HOUR_MS },
        operatorContext(),
        deps,
      ),
    );
    expect(sooner.fieldErrors[0]?.message).toMatch(
      /^must be later than the current expiry .*; to end it sooner, revert it$/,
    );
    const stale = await expectRefusedWithoutWrites(db, () =>
      extendIncident(
        { id: incident.id, expectedVersion: 1, durationMs: 24 * HOUR_MS },
        operatorContext(),
        deps,
      ),
    );
    expect(stale.code).toBe("VERSION_CONFLICT");
    expect(stale.message).toContain("What changed: expiresAt");
  });

  it("revert ends an incident at once with a new version; it cannot be reverted or extended again", async () => {
    const { db } = database.current();
    const customerId = await proCustomer();
    const { incident } = await raiseIncident(
      { customerId, factor: 2, durationMs: HOUR_MS },
      operatorContext(),
      deps,
    );
    const { result, entry } = await expectOneAuditEntry(db, () =>
      revertIncident(
        { id: incident.id, expectedVersion: 1 },
        operatorContext("customer recovered"),
        deps,
      ),
    );
    expect(result.incident).toMatchObject({ revokedBy: "Dana Operator", version: 2 });
    expect(result.policyVersion).not.toBeNull();
    expect(entry).toMatchObject({
      action: "incident.revert",
      before: { revokedAt: null },
      after: { revokedBy: "Dana Operator", effect: PRO_TIMES_TWO },
    });
    // Reverting puts the usual limit back: the numbers read from the incident's to the tier's.
    expect(sentenceOf(entry)).toMatch(
      new RegExp(
        `^${customerId}, all endpoints: 200/s, bursts of 400 → 100/s, bursts of 200 reverted before its end \\(.+\\); the usual limit applies again$`,
      ),
    );
    const snapshot = await latestSnapshot(db);
    expect(snapshot.policy.incidentOverrides.map((item) => item.id)).not.toContain(incident.id);
    expect(accountCheck(snapshot, customerId, Date.now())?.scope).toBe("tier:pro");

    const again = await expectRefusedWithoutWrites(db, () =>
      revertIncident({ id: incident.id, expectedVersion: 2 }, operatorContext(), deps),
    );
    expect(again.message).toMatch(/^incident ".*" was already reverted at .* by Dana Operator\.$/);
    const extend = await expectRefusedWithoutWrites(db, () =>
      extendIncident(
        { id: incident.id, expectedVersion: 2, durationMs: 2 * HOUR_MS },
        operatorContext(),
        deps,
      ),
    );
    expect(extend.code).toBe("CONFLICT");
    const missing = await expectRefusedWithoutWrites(db, () =>
      revertIncident({ id: "no-such-incident", expectedVersion: 1 }, operatorContext(), deps),
    );
    expect(missing.code).toBe("NOT_FOUND");
  });
});

describe("recordIncidentExpiries", () => {
  it("records each natural expiry once, by the system actor, without a new version", async () => {
    const { db } = database.current();
    const customerId = await proCustomer();
    const { incident: expiring } = await raiseIncident(
      { customerId, factor: 2, durationMs: HOUR_MS },
      operatorContext(),
      deps,
    );
    const other = await proCustomer();
    const { incident: reverted } = await raiseIncident(
      { customerId: other, factor: 2, durationMs: HOUR_MS },
      operatorContext(),
      deps,
    );
    await revertIncident({ id: reverted.id, expectedVersion: 1 }, operatorContext(), deps);

    const later = Date.now() + 2 * HOUR_MS;
    const before = await countEverything(db);
    const recorded = await recordIncidentExpiries(depsFor(db, () => later));
    expect(recorded).toContain(expiring.id);
    expect(recorded).not.toContain(reverted.id);
    const after = await countEverything(db);
    expect(after.audit).toBe((before.audit ?? 0) + recorded.length);
    expect(after.versions).toBe(before.versions);
    expect(after.outbox).toBe(before.outbox);

    const entries = await latestAuditEntries(db, recorded.length);
    const entry = entries.find((item) => item.entityId === expiring.id);
    expect(entry).toMatchObject({
      action: "incident.expire",
      actorType: "system",
      actorId: null,
      actorName: "incident expiry",
      customerId,
      reason: `reached its expiry at ${expiring.expiresAt}`,
      policyVersion: null,
      before: { expiryRecordedAt: null, version: 1 },
      after: { version: 2 },
    });
    expect(await recordIncidentExpiries(depsFor(db, () => later))).toEqual([]);
    expect(
      (await listIncidents({ customerId, status: "history", nowMs: later }, deps)).map(
        (item) => item.state,
      ),
    ).toEqual(["expired"]);
  });

  it("listIncidents finds those expiring soon", async () => {
    const customerId = await proCustomer();
    const { incident: soon } = await raiseIncident(
      { customerId, factor: 2, durationMs: 10 * 60_000 },
      operatorContext(),
      deps,
    );
    const { incident: later } = await raiseIncident(
      { customerId, endpointClass: "reports", factor: 2, durationMs: 5 * HOUR_MS },
      operatorContext(),
      deps,
    );
    const expiringSoon = await listIncidents({ customerId, expiringWithinMs: 15 * 60_000 }, deps);
    expect(expiringSoon.map((item) => item.id)).toEqual([soon.id]);
    expect((await listIncidents({ customerId }, deps)).map((item) => item.id)).toEqual([
      soon.id,
      later.id,
    ]);
  });

  it("listIncidentsPage pages every incident in force exactly once, ties on expiry included", async () => {
    const nowMs = Date.now();
    const sharedExpiry = new Date(nowMs + 3 * HOUR_MS).toISOString();
    const raised: string[] = [];
    for (let index = 0; index < 5; index++) {
      const customerId = await proCustomer();
      const { incident } = await raiseIncident(
        index < 3
          ? { customerId, factor: 2, expiresAt: sharedExpiry }
          : { customerId, factor: 2, durationMs: (index + 1) * HOUR_MS },
        operatorContext(),
        deps,
      );
      raised.push(incident.id);
    }
    const whole = await listIncidents({ status: "current", limit: 500, nowMs }, deps);
    const paged: string[] = [];
    let after: string | undefined;
    let pages = 0;
    do {
      const page = await listIncidentsPage({ status: "current", limit: 2, nowMs, after }, deps);
      expect(page.incidents.length).toBeLessThanOrEqual(2);
      paged.push(...page.incidents.map((incident) => incident.id));
      after = page.nextCursor ?? undefined;
      pages += 1;
    } while (after !== undefined && pages < 1000);
    expect(paged).toEqual(whole.map((incident) => incident.id));
    expect(new Set(paged).size).toBe(paged.length);
    for (const id of raised) expect(paged).toContain(id);
  });

  it.each([
    ["bm90LWEtY3Vyc29y", "after is not a page cursor"],
    ["<script>", "after contains characters a page cursor never has"],
    ["x".repeat(201), "after is longer than 200 characters"],
  ])("listIncidentsPage refuses the cursor %j, naming the field", async (after, message) => {
    await expect(listIncidentsPage({ after }, deps)).rejects.toMatchObject({
      code: "VALIDATION_FAILED",
      fieldErrors: [{ path: "after", message }],
    });
  });
});
