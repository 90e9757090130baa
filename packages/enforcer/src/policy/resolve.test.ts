import { describe, expect, it } from "vitest";
import { exampleSnapshot, tokenBucket } from "../testing/policy-factory";
import { describeLimit } from "./limit-math";
import { prepareSnapshot } from "./prepare";
import { explainTrace, type ResolvedCheck, type ResolveRequest, resolveLimits } from "./resolve";
import type { TPolicyDocumentInput, TSnapshot } from "./schemas";

const BEFORE_INCIDENT = Date.parse("2025-06-02T08:59:59.999Z");
const INCIDENT_STARTS = Date.parse("2025-06-02T09:00:00.000Z");
const DURING_INCIDENT = Date.parse("2025-06-02T12:00:00.000Z");
const INCIDENT_EXPIRES = Date.parse("2025-06-02T21:00:00.000Z");

/** One line per check: scope, bucket, mode, failure policy, limit. */
function summarize(checks: readonly ResolvedCheck[]): string[] {
  return checks.map(
    (check) =>
      `${check.layer} ${check.scope} @${check.bucket} ${check.mode} ${check.onStoreFailure} ${describeLimit(check.limit)}`,
  );
}

interface Case {
  readonly name: string;
  readonly edit?: (input: TPolicyDocumentInput) => void;
  readonly request: ResolveRequest;
  readonly nowMs?: number;
  readonly subject: string;
  readonly checks: readonly string[];
  readonly notes?: readonly string[];
}

const TIER_FREE = "account tier:free @account enforce open token-bucket 20 burst, 10/s";
const TIER_PRO = "account tier:pro @account enforce open token-bucket 200 burst, 100/s";
const TIER_ENTERPRISE =
  "account tier:enterprise @account enforce open token-bucket 5000 burst, 1000/s";
const CANDIDATE_FREE =
  "account candidate:free-halved @candidate:free-halved dry-run open token-bucket 10 burst, 5/s";
const CEILING = "ceiling ceiling @ceiling enforce local token-bucket 10000 burst, 2000/s";
const REPORTS_CEILING =
  "ceiling ceiling/endpoint:reports @ceiling/endpoint:reports enforce local token-bucket 2000 burst, 100/s";
const ADDRESS_CEILING = "ceiling address @ceiling enforce local token-bucket 100 burst, 20/s";

const cases: Case[] = [
  {
    name: "a pro customer with no overrides gets its tier's account limit and the global ceiling",
    request: { customerId: "org:umbrella", tier: "pro", method: "GET", path: "/v1/search?q=x" },
    subject: "c:org:umbrella",
    checks: [TIER_PRO, CEILING],
  },
  {
    name: "a dry-run candidate runs next to the enforced tier limit it would replace, on its own bucket",
    request: { customerId: "initech", tier: "free", method: "GET", path: "/v1/reports/42" },
    subject: "c:initech",
    checks: [
      TIER_FREE,
      CANDIDATE_FREE,
      "endpoint tier:free/endpoint:reports @endpoint:reports enforce open token-bucket 20 burst, 0.5/s",
      CEILING,
      REPORTS_CEILING,
    ],
  },
  {
    name: "an incident that has not started yet does not apply",
    request: { customerId: "acme", tier: "enterprise", endpointClass: "search" },
    nowMs: BEFORE_INCIDENT,
    subject: "c:acme",
    checks: [TIER_ENTERPRISE, CEILING],
  },
  {
    name: "an incident applies from its start instant, on the account bucket",
    request: { customerId: "acme", tier: "enterprise", endpointClass: "search" },
    nowMs: INCIDENT_STARTS,
    subject: "c:acme",
    checks: [
      "account incident:inc-2025-06-02-acme @account enforce open token-bucket 15000 burst, 3000/s",
      CEILING,
    ],
  },
  {
    name: "an incident stops applying at its expiry instant",
    request: { customerId: "acme", tier: "enterprise", endpointClass: "search" },
    nowMs: INCIDENT_EXPIRES,
    subject: "c:acme",
    checks: [TIER_ENTERPRISE, CEILING],
  },
  {
    name: "a raise above the ceiling leaves the ceiling in place (10000 < 15000, so it binds)",
    request: { customerId: "acme", tier: "enterprise", method: "POST", path: "/v1/reports" },
    nowMs: DURING_INCIDENT,
    subject: "c:acme",
    checks: [
      "account incident:inc-2025-06-02-acme @account enforce open token-bucket 15000 burst, 3000/s",
      "endpoint tier:enterprise/endpoint:reports @endpoint:reports enforce open token-bucket 1000 burst, 50/s",
      CEILING,
      REPORTS_CEILING,
    ],
  },
  {
    name: "a customer override for an endpoint class replaces the tier's limit there, same bucket",
    request: { customerId: "globex", tier: "pro", method: "GET", path: "/v1/reports" },
    subject: "c:globex",
    checks: [
      TIER_PRO,
      "endpoint customer:globex/endpoint:reports @endpoint:reports enforce open token-bucket 300 burst, 15/s",
      CEILING,
      REPORTS_CEILING,
    ],
  },
  {
    name: "overlapping overrides: account override, endpoint override and an endpoint incident",
    edit: (input) => {
      input.customerOverrides?.push({
        customerId: "globex",
        endpointClass: null,
        limit: tokenBucket(400, 150),
      });
      input.incidentOverrides?.push({
        id: "inc-globex-reports",
        customerId: "globex",
        endpointClass: "reports",
        factor: 0.5,
        startsAt: "2025-06-02T10:00:00Z",
        expiresAt: "2025-06-02T14:00:00Z",
        owner: "sam",
        reason: "Globex report storm",
      });
    },
    request: { customerId: "globex", tier: "pro", endpointClass: "reports" },
    nowMs: DURING_INCIDENT,
    subject: "c:globex",
    checks: [
      "account customer:globex @account enforce open token-bucket 400 burst, 150/s",
      "endpoint incident:inc-globex-reports @endpoint:reports enforce open token-bucket 150 burst, 7.5/s",
      CEILING,
      REPORTS_CEILING,
    ],
  },
  {
    name: "a limit in mode off produces no check, and an off override falls back to the tier",
    edit: (input) => {
      const reports = input.endpointClasses.find((c) => c.name === "reports");
      if (reports?.ceiling) reports.ceiling.mode = "off";
      input.customerOverrides?.push({
        customerId: "initech",
        endpointClass: null,
        limit: { ...tokenBucket(500, 50), mode: "off" },
      });
      const free = reports?.limits?.free;
      if (free) free.mode = "off";
    },
    request: { customerId: "initech", tier: "free", endpointClass: "reports" },
    subject: "c:initech",
    checks: [TIER_FREE, CANDIDATE_FREE, CEILING],
  },
  {
    name: "an override in dry-run is checked next to the tier limit, which stays enforced",
    edit: (input) => {
      input.customerOverrides?.push({
        customerId: "org:umbrella",
        endpointClass: null,
        limit: { ...tokenBucket(50, 25), mode: "dry-run" },
      });
    },
    request: { customerId: "org:umbrella", tier: "pro", endpointClass: "default" },
    subject: "c:org:umbrella",
    checks: [
      TIER_PRO,
      "account customer:org:umbrella @dry-run/customer:org:umbrella dry-run open token-bucket 50 burst, 25/s",
      CEILING,
    ],
  },
  {
    name: "a candidate is not counted where a customer override outranks the rule it would replace",
    edit: (input) => {
      input.customerOverrides?.push({
        customerId: "initech",
        endpointClass: null,
        limit: tokenBucket(40, 20),
      });
    },
    request: { customerId: "initech", tier: "free", endpointClass: "default" },
    subject: "c:initech",
    checks: ["account customer:initech @account enforce open token-bucket 40 burst, 20/s", CEILING],
  },
  {
    name: "a candidate can propose a new endpoint limit where the tier has none",
    edit: (input) => {
      input.dryRunCandidates?.push({
        id: "pro-search",
        target: "tier:pro/endpoint:search",
        limit: tokenBucket(40, 4),
      });
    },
    request: { customerId: "org:umbrella", tier: "pro", endpointClass: "search" },
    subject: "c:org:umbrella",
    checks: [
      TIER_PRO,
      "endpoint candidate:pro-search @candidate:pro-search dry-run open token-bucket 40 burst, 4/s",
      CEILING,
    ],
  },
  {
    name: "anonymous traffic is keyed by address and held to the per-address ceiling",
    request: { method: "GET", path: "/v1/search", clientAddress: "198.51.100.7" },
    subject: "a:198.51.100.7",
    checks: [ADDRESS_CEILING],
  },
  {
    name: "a sign-in-like endpoint is keyed by address and route, its limit failing closed",
    request: { method: "POST", path: "/v1/auth/sign-in", clientAddress: "::ffff:198.51.100.7" },
    subject: "a:198.51.100.7/endpoint:sign-in",
    checks: [
      "endpoint address/endpoint:sign-in @endpoint:sign-in enforce closed fixed-window 10 per 900000 ms",
      ADDRESS_CEILING,
    ],
  },
  {
    name: "an IPv6 client is keyed by its /64 network",
    request: { endpointClass: "search", clientAddress: "2001:DB8:0:1:aaaa::7" },
    subject: "a:2001:db8:0:1::/64",
    checks: [ADDRESS_CEILING],
  },
  {
    name: "anonymous traffic without a usable address shares the unknown subject",
    request: { endpointClass: "search", clientAddress: "not-an-ip" },
    subject: "a:unknown",
    checks: [ADDRESS_CEILING],
    notes: ['client address "not-an-ip" is not an IP address; keyed as "unknown"'],
  },
  {
    name: "an unknown tier falls back to the default tier, and says so",
    request: { customerId: "newco", tier: "platinum", endpointClass: "search" },
    subject: "c:newco",
    checks: [
      TIER_FREE,
      CANDIDATE_FREE,
      "endpoint tier:free/endpoint:search @endpoint:search enforce open token-bucket 20 burst, 2/s",
      CEILING,
    ],
    notes: ['tier "platinum" is not defined; using the default tier "free"'],
  },
  {
    name: "a tier named like an Object.prototype property is an ordinary tier",
    edit: (input) => {
      input.tiers.push({ name: "constructor", limit: tokenBucket(30, 3) });
    },
    request: { customerId: "newco", tier: "constructor", endpointClass: "reports" },
    subject: "c:newco",
    checks: [
      "account tier:constructor @account enforce open token-bucket 30 burst, 3/s",
      CEILING,
      REPORTS_CEILING,
    ],
  },
];

describe("resolveLimits", () => {
  it.each(cases)("$name", (testCase) => {
    const snapshot = exampleSnapshot(testCase.edit);
    const resolution = resolveLimits(snapshot, testCase.request, testCase.nowMs ?? DURING_INCIDENT);
    expect(resolution.subject).toBe(testCase.subject);
    expect(summarize(resolution.checks)).toEqual(testCase.checks);
    expect(resolution.trace?.notes ?? []).toEqual(testCase.notes ?? []);
  });

  it("gives the full trace for an enterprise customer during its incident", () => {
    const resolution = resolveLimits(
      exampleSnapshot(),
      { customerId: "acme", tier: "enterprise", method: "GET", path: "/v1/reports/monthly" },
      DURING_INCIDENT,
    );
    expect(resolution).toMatchObject({
      subjectKind: "customer",
      tier: "enterprise",
      endpointClass: "reports",
      cost: 10,
    });
    expect(resolution.trace).toEqual({
      nowMs: DURING_INCIDENT,
      subject: "c:acme",
      tier: { requested: "enterprise", used: "enterprise", isFallback: false },
      endpointClass: {
        requested: null,
        used: "reports",
        via: "match",
        rule: { method: "GET", path: "/v1/reports/**" },
      },
      notes: [],
      slots: [
        {
          layer: "account",
          bucket: "account",
          rules: [
            {
              scope: "tier:enterprise",
              source: "tier",
              status: "replaced",
              limit: tokenBucket(5000, 1000),
              mode: "enforce",
              by: "incident:inc-2025-06-02-acme",
              incident: null,
              target: null,
            },
            {
              scope: "incident:inc-2025-06-02-acme",
              source: "incident-override",
              status: "applies",
              limit: tokenBucket(15000, 3000),
              mode: "enforce",
              by: null,
              incident: {
                factor: 3,
                startsAt: "2025-06-02T09:00:00.000Z",
                expiresAt: "2025-06-02T21:00:00.000Z",
              },
              target: null,
            },
          ],
        },
        {
          layer: "endpoint",
          bucket: "endpoint:reports",
          rules: [
            {
              scope: "tier:enterprise/endpoint:reports",
              source: "tier",
              status: "applies",
              limit: tokenBucket(1000, 50),
              mode: "enforce",
              by: null,
              incident: null,
              target: null,
            },
          ],
        },
        {
          layer: "ceiling",
          bucket: "ceiling",
          rules: [
            {
              scope: "ceiling",
              source: "ceiling",
              status: "applies",
              limit: tokenBucket(10000, 2000),
              mode: "enforce",
              by: null,
              incident: null,
              target: null,
            },
          ],
        },
        {
          layer: "ceiling",
          bucket: "ceiling/endpoint:reports",
          rules: [
            {
              scope: "ceiling/endpoint:reports",
              source: "ceiling",
              status: "applies",
              limit: tokenBucket(2000, 100),
              mode: "enforce",
              by: null,
              incident: null,
              target: null,
            },
          ],
        },
      ],
    });
  });

  it("explains in words why expired, future, superseded and replaced rules do not apply", () => {
    const snapshot = exampleSnapshot(
      (input) => {
        input.customerOverrides?.push({
          customerId: "acme",
          endpointClass: null,
          limit: tokenBucket(6000, 1200),
        });
        input.incidentOverrides?.push({
          id: "inc-old",
          customerId: "acme",
          endpointClass: null,
          factor: 2,
          startsAt: "2025-06-01T09:00:00Z",
          expiresAt: "2025-06-01T21:00:00Z",
          owner: "sam",
          reason: "earlier incident",
        });
        input.incidentOverrides?.push({
          id: "inc-next",
          customerId: "acme",
          endpointClass: null,
          limit: tokenBucket(8000, 1500),
          startsAt: "2025-06-03T09:00:00Z",
          expiresAt: "2025-06-03T10:00:00Z",
          owner: "sam",
          reason: "planned launch",
        });
      },
      { compiledAt: "2025-05-31T00:00:00Z" },
    );
    const resolution = resolveLimits(
      snapshot,
      { customerId: "acme", tier: "enterprise", endpointClass: "default" },
      DURING_INCIDENT,
    );
    if (resolution.trace === null) throw new Error("expected a trace");
    expect(explainTrace(resolution.trace)).toEqual([
      "subject c:acme at 2025-06-02T12:00:00.000Z",
      "account (bucket account):",
      "  tier:enterprise  token-bucket 5000 burst, 1000/s  replaced by incident:inc-2025-06-02-acme",
      "  customer:acme  token-bucket 6000 burst, 1200/s  replaced by incident:inc-2025-06-02-acme",
      "  incident:inc-old x2 [2025-06-01T09:00:00.000Z to 2025-06-01T21:00:00.000Z]  token-bucket 12000 burst, 2400/s  expired",
      "  incident:inc-2025-06-02-acme x3 [2025-06-02T09:00:00.000Z to 2025-06-02T21:00:00.000Z]  token-bucket 18000 burst, 3600/s  applies",
      "  incident:inc-next [2025-06-03T09:00:00.000Z to 2025-06-03T10:00:00.000Z]  token-bucket 8000 burst, 1500/s  not-started",
      "endpoint (bucket endpoint:default): no limit",
      "ceiling (bucket ceiling):",
      "  ceiling  token-bucket 10000 burst, 2000/s  applies",
      "ceiling (bucket ceiling/endpoint:default): no limit",
    ]);
  });

  it("traces an anonymous sign-in with no account layer", () => {
    const resolution = resolveLimits(
      exampleSnapshot(),
      { method: "post", path: "/V1/Auth/Sign-In/", clientAddress: "[2001:db8::1]:443" },
      DURING_INCIDENT,
    );
    expect(resolution.subjectKind).toBe("address");
    expect(resolution.tier).toBeNull();
    expect(resolution.subject).toBe("a:2001:db8:0:0::/64/endpoint:sign-in");
    if (resolution.trace === null) throw new Error("expected a trace");
    expect(explainTrace(resolution.trace)).toEqual([
      "subject a:2001:db8:0:0::/64/endpoint:sign-in at 2025-06-02T12:00:00.000Z",
      "account (bucket account): no limit",
      "endpoint (bucket endpoint:sign-in):",
      "  address/endpoint:sign-in  fixed-window 10 per 900000 ms  applies",
      "ceiling (bucket ceiling):",
      "  address  token-bucket 100 burst, 20/s  applies",
      "ceiling (bucket ceiling/endpoint:sign-in): no limit",
    ]);
  });
});

/** Rewrites a compiled snapshot's policy, for states the document schema refuses to produce. */
function withPolicy(
  snapshot: TSnapshot,
  edit: (policy: TSnapshot["policy"]) => TSnapshot["policy"],
): TSnapshot {
  return { ...snapshot, policy: edit(snapshot.policy) };
}

describe("resolveLimits on states only a snapshot can hold", () => {
  const incident = {
    customerId: "acme",
    endpointClass: "search",
    factor: null,
    limit: null,
    startsAt: "2025-06-02T10:00:00.000Z",
    expiresAt: "2025-06-02T14:00:00.000Z",
  };

  it("an incident factor with no enforced limit below it has nothing to scale", () => {
    const snapshot = withPolicy(exampleSnapshot(), (policy) => ({
      ...policy,
      incidentOverrides: [{ ...incident, id: "inc-scale", factor: 2 }],
    }));
    const resolution = resolveLimits(
      snapshot,
      { customerId: "acme", tier: "enterprise", endpointClass: "search" },
      DURING_INCIDENT,
    );
    expect(summarize(resolution.checks)).toEqual([TIER_ENTERPRISE, CEILING]);
    expect(resolution.trace?.slots[1]?.rules).toEqual([
      {
        scope: "incident:inc-scale",
        source: "incident-override",
        status: "nothing-to-scale",
        limit: null,
        mode: "enforce",
        by: null,
        incident: { factor: 2, startsAt: incident.startsAt, expiresAt: incident.expiresAt },
        target: null,
      },
    ]);
  });

  it("an absolute incident limit where no rule exists applies, failing open like a customer limit", () => {
    const snapshot = withPolicy(exampleSnapshot(), (policy) => ({
      ...policy,
      incidentOverrides: [{ ...incident, id: "inc-cut", limit: tokenBucket(10, 1) }],
    }));
    const resolution = resolveLimits(
      snapshot,
      { customerId: "acme", tier: "enterprise", endpointClass: "search" },
      DURING_INCIDENT,
    );
    expect(summarize(resolution.checks)).toEqual([
      TIER_ENTERPRISE,
      "endpoint incident:inc-cut @endpoint:search enforce open token-bucket 10 burst, 1/s",
      CEILING,
    ]);
  });

  it("of two active incidents the later-started applies and the other is superseded", () => {
    const snapshot = withPolicy(exampleSnapshot(), (policy) => ({
      ...policy,
      incidentOverrides: [
        {
          ...incident,
          id: "inc-b",
          limit: tokenBucket(30, 3),
          startsAt: "2025-06-02T11:00:00.000Z",
        },
        { ...incident, id: "inc-a", limit: tokenBucket(20, 2) },
      ],
    }));
    const resolution = resolveLimits(
      snapshot,
      { customerId: "acme", tier: "enterprise", endpointClass: "search" },
      DURING_INCIDENT,
    );
    expect(
      resolution.trace?.slots[1]?.rules.map((rule) => [rule.scope, rule.status, rule.by]),
    ).toEqual([
      ["incident:inc-a", "superseded", "incident:inc-b"],
      ["incident:inc-b", "applies", null],
    ]);
  });
});

describe("resolveLimits endpoint class selection", () => {
  const snapshot = exampleSnapshot();
  const at = DURING_INCIDENT;

  it.each([
    { request: { endpointClass: "reports" }, used: "reports", via: "request" },
    { request: { method: "HEAD", path: "/v1/reports/9" }, used: "reports", via: "match" },
    { request: { method: "DELETE", path: "/v1/reports/9" }, used: "default", via: "default" },
    { request: { path: "/v1/search" }, used: "search", via: "match" },
    { request: {}, used: "default", via: "default" },
    {
      request: { endpointClass: "gone", method: "GET", path: "/v1/search" },
      used: "search",
      via: "match",
    },
  ] satisfies { request: ResolveRequest; used: string; via: string }[])(
    "$request resolves to $used via $via",
    ({ request, used, via }) => {
      const resolution = resolveLimits(snapshot, { ...request, clientAddress: "192.0.2.1" }, at);
      expect(resolution.endpointClass).toBe(used);
      expect(resolution.trace?.endpointClass.via).toBe(via);
    },
  );

  it("reports the endpoint class's cost", () => {
    expect(resolveLimits(snapshot, { endpointClass: "reports" }, at).cost).toBe(10);
    expect(resolveLimits(snapshot, { endpointClass: "search" }, at).cost).toBe(2);
  });
});

describe("resolveLimits on the hot path", () => {
  it("gives the same checks with and without a trace", () => {
    const prepared = prepareSnapshot(exampleSnapshot());
    for (const request of [
      { customerId: "globex", tier: "pro", endpointClass: "reports" },
      { customerId: "acme", tier: "enterprise", endpointClass: "reports" },
      { customerId: "initech", tier: "free", endpointClass: "search" },
      { endpointClass: "sign-in", clientAddress: "192.0.2.1" },
    ]) {
      const traced = resolveLimits(prepared, request, DURING_INCIDENT);
      const untraced = resolveLimits(prepared, request, DURING_INCIDENT, { trace: false });
      expect(untraced.trace).toBeNull();
      expect(untraced.checks).toEqual(traced.checks);
      expect(untraced.subject).toBe(traced.subject);
    }
  });

  it("shares one frozen result between customers without overrides of the same tier and class", () => {
    const prepared = prepareSnapshot(exampleSnapshot());
    const first = resolveLimits(
      prepared,
      { customerId: "a1", tier: "pro", endpointClass: "reports" },
      0,
    );
    const second = resolveLimits(
      prepared,
      { customerId: "a2", tier: "pro", endpointClass: "reports" },
      1,
    );
    expect(second.checks).toBe(first.checks);
    expect(Object.isFrozen(first.checks)).toBe(true);
    expect(Object.isFrozen(first.checks[0])).toBe(true);
    expect(second.subject).toBe("c:a2");
  });

  it("prepares a snapshot once however often it is resolved", () => {
    const snapshot = exampleSnapshot();
    expect(prepareSnapshot(snapshot)).toBe(prepareSnapshot(snapshot));
  });

  it("refuses a malformed customer id and a non-finite time: the caller validates its input", () => {
    const snapshot = exampleSnapshot();
    expect(() => resolveLimits(snapshot, { customerId: "a/b" }, 0)).toThrow(/invalid customer id/);
    expect(() => resolveLimits(snapshot, { customerId: "acme" }, Number.NaN)).toThrow(/nowMs/);
  });
});

describe('a limit with durability "replicated"', () => {
  const request = { customerId: "newco", tier: "vault", endpointClass: "reports" };

  it("resolves to a check asking the store for it", () => {
    const snapshot = exampleSnapshot((input) => {
      input.tiers.push({
        name: "vault",
        limit: { ...tokenBucket(30, 3), onStoreFailure: "closed", durability: "replicated" },
      });
    });
    const before = resolveLimits(snapshot, request, BEFORE_INCIDENT);
    expect(before.checks.filter((check) => check.durability === "replicated")).toEqual([
      expect.objectContaining({ scope: "tier:vault", onStoreFailure: "closed" }),
    ]);
    // Every other limit leaves the field out: the default (async) costs nothing to carry.
    expect(before.checks.filter((check) => "durability" in check)).toHaveLength(1);
  });

  it("stays out of a snapshot that does not ask for it, and a wrong value is refused by name", () => {
    expect(JSON.stringify(exampleSnapshot())).not.toContain("durability");
    expect(() =>
      exampleSnapshot((input) => {
        input.tiers.push({
          name: "vault",
          limit: { ...tokenBucket(30, 3), durability: "sync" as never },
        });
      }),
    ).toThrow(/durability must be one of: async, replicated/);
  });
});
