import { describe, expect, it } from "vitest";
import { z } from "zod";
import { examplePolicyInput, tokenBucket } from "../testing/policy-factory";
import { formatFieldPath } from "./errors";
import {
  findReplacedLimit,
  parsePolicyDocument,
  type TPolicyDocumentInput,
  ZLimitSpec,
  ZPolicyDocument,
} from "./schemas";

/** Sets a value the types forbid, by path: these cases are about input the types cannot express. */
function set(root: unknown, path: readonly (string | number)[], value: unknown): void {
  const parent = walk(root, path.slice(0, -1));
  Reflect.set(parent, String(path[path.length - 1]), value);
}

/** Removes a field by path. */
function remove(root: unknown, path: readonly (string | number)[]): void {
  Reflect.deleteProperty(walk(root, path.slice(0, -1)), String(path[path.length - 1]));
}

function walk(root: unknown, path: readonly (string | number)[]): object {
  let node: unknown = root;
  for (const key of path) {
    if (typeof node !== "object" || node === null) throw new Error(`no object at ${key}`);
    const next: unknown = Reflect.get(node, String(key));
    node = next;
  }
  if (typeof node !== "object" || node === null) throw new Error("no object at the path");
  return node;
}

const incident = {
  id: "inc-1",
  customerId: "acme",
  endpointClass: null,
  factor: 2,
  startsAt: "2025-06-03T09:00:00Z",
  expiresAt: "2025-06-03T12:00:00Z",
  owner: "dana",
  reason: "launch",
};

interface InvalidCase {
  readonly name: string;
  readonly edit: (input: TPolicyDocumentInput) => void;
  readonly path: string;
  readonly message: string;
}

const invalid: InvalidCase[] = [
  {
    name: "a negative count",
    edit: (input) => {
      set(input, ["tiers", 0, "limit", "capacity"], -5);
    },
    path: "tiers[0].limit.capacity",
    message: "capacity must be at least 1",
  },
  {
    name: "a fractional count",
    edit: (input) => {
      set(input, ["tiers", 0, "limit", "capacity"], 2.5);
    },
    path: "tiers[0].limit.capacity",
    message: "capacity must be a whole number, not 2.5",
  },
  {
    name: "a number JSON reads as Infinity",
    edit: (input) => {
      set(input, ["tiers", 0, "limit", "refillPerSec"], JSON.parse("1e999"));
    },
    path: "tiers[0].limit.refillPerSec",
    message: "refillPerSec must be a finite number, not Infinity",
  },
  {
    name: "NaN",
    edit: (input) => {
      set(input, ["tiers", 1, "limit", "capacity"], Number.NaN);
    },
    path: "tiers[1].limit.capacity",
    message: "capacity must be a finite number, not NaN",
  },
  {
    name: "a number written as text",
    edit: (input) => {
      set(input, ["tiers", 0, "limit", "capacity"], "20");
    },
    path: "tiers[0].limit.capacity",
    message: 'capacity must be a finite number, not the text "20"',
  },
  {
    name: "a huge count",
    edit: (input) => {
      set(input, ["tiers", 0, "limit", "capacity"], 1e12);
    },
    path: "tiers[0].limit.capacity",
    message: "capacity must be at most 1000000000",
  },
  {
    name: "a window longer than 365 days",
    edit: (input) => {
      input.tiers[0] = {
        name: "free",
        limit: { algorithm: "fixed-window", limit: 100, windowMs: 366 * 86_400_000 },
      };
    },
    path: "tiers[0].limit.windowMs",
    message: "windowMs must be at most 31536000000",
  },
  {
    name: "a zero rate",
    edit: (input) => {
      set(input, ["tiers", 0, "limit", "refillPerSec"], 0);
    },
    path: "tiers[0].limit.refillPerSec",
    message: "refillPerSec must be at least 0.000001",
  },
  {
    name: "a missing field",
    edit: (input) => {
      remove(input, ["tiers", 0, "limit", "refillPerSec"]);
    },
    path: "tiers[0].limit.refillPerSec",
    message: "refillPerSec is required",
  },
  {
    name: "an unknown field in a limit",
    edit: (input) => {
      set(input, ["tiers", 0, "limit", "burst"], 5);
    },
    path: "tiers[0].limit.burst",
    message:
      'unknown field "burst"; expected only: algorithm, capacity, refillPerSec, mode, onStoreFailure',
  },
  {
    name: "an unknown top-level field",
    edit: (input) => {
      set(input, ["colour"], "blue");
    },
    path: "colour",
    message: 'unknown field "colour"',
  },
  {
    name: "an unknown algorithm",
    edit: (input) => {
      set(input, ["tiers", 0, "limit", "algorithm"], "gcra");
    },
    path: "tiers[0].limit.algorithm",
    message:
      "algorithm must be one of: fixed-window, sliding-log, sliding-window, token-bucket, leaky-meter",
  },
  {
    name: "an unknown mode",
    edit: (input) => {
      set(input, ["tiers", 0, "limit", "mode"], "shadow");
    },
    path: "tiers[0].limit.mode",
    message: "mode must be one of: enforce, dry-run, off",
  },
  {
    name: "an unknown failure policy",
    edit: (input) => {
      set(input, ["ceilings", "perCustomer", "onStoreFailure"], "retry");
    },
    path: "ceilings.perCustomer.onStoreFailure",
    message: "onStoreFailure must be one of: open, closed, local",
  },
  {
    name: "a line break in a display name",
    edit: (input) => {
      input.customers?.splice(0, 1, { id: "acme", displayName: "Acme\nCorp", tier: "enterprise" });
    },
    path: "customers[0].displayName",
    message: "must not contain control characters",
  },
  {
    name: "a right-to-left override in a display name",
    edit: (input) => {
      input.customers?.splice(0, 1, {
        id: "acme",
        displayName: "Acme\u202eproC",
        tier: "enterprise",
      });
    },
    path: "customers[0].displayName",
    message: "bidirectional formatting characters",
  },
  {
    name: "a display name that is only spaces",
    edit: (input) => {
      input.customers?.splice(0, 1, { id: "acme", displayName: "   ", tier: "enterprise" });
    },
    path: "customers[0].displayName",
    message: "displayName must not be empty",
  },
  {
    name: "a too long display name",
    edit: (input) => {
      input.customers?.splice(0, 1, {
        id: "acme",
        displayName: "A".repeat(201),
        tier: "enterprise",
      });
    },
    path: "customers[0].displayName",
    message: "displayName must be at most 200 characters",
  },
  {
    name: "an upper-case tier name",
    edit: (input) => {
      set(input, ["tiers", 1, "name"], "Pro");
    },
    path: "tiers[1].name",
    message: 'tier name must be 1 to 63 characters of a-z, 0-9, "_" and "-"',
  },
  {
    name: "a customer id with a slash",
    edit: (input) => {
      input.customers?.push({ id: "org/acme", displayName: "x", tier: "pro" });
    },
    path: "customers[4].id",
    message: "customer id must be 1 to 128 characters",
  },
  {
    name: "a customer id of dots",
    edit: (input) => {
      input.customers?.push({ id: "..", displayName: "x", tier: "pro" });
    },
    path: "customers[4].id",
    message: "starting with a letter or digit",
  },
  {
    name: "an expiry before the start",
    edit: (input) => {
      input.incidentOverrides = [{ ...incident, expiresAt: "2025-06-03T08:00:00Z" }];
    },
    path: "incidentOverrides[0].expiresAt",
    message: "expiresAt must be after startsAt",
  },
  {
    name: "an incident longer than the guardrail",
    edit: (input) => {
      input.incidentOverrides = [{ ...incident, expiresAt: "2025-06-05T09:00:00Z" }];
    },
    path: "incidentOverrides[0].expiresAt",
    message: "the override would last 48 h; the maximum is 24 h (guardrails.maxIncidentDurationMs)",
  },
  {
    name: "a factor above the guardrail",
    edit: (input) => {
      input.incidentOverrides = [{ ...incident, factor: 12 }];
    },
    path: "incidentOverrides[0].factor",
    message:
      "factor 12 would raise the limit 12x; the maximum raise is 10x (guardrails.maxIncidentFactor)",
  },
  {
    name: "a factor below the guardrail's deepest cut",
    edit: (input) => {
      input.incidentOverrides = [{ ...incident, factor: 0.05 }];
    },
    path: "incidentOverrides[0].factor",
    message: "would cut the limit to 1/20; the deepest cut is to 1/10, a factor of 0.1",
  },
  {
    name: "an absolute limit above the guardrail, compared with the limit it replaces",
    edit: (input) => {
      input.incidentOverrides = [{ ...incident, factor: null, limit: tokenBucket(100_000, 1000) }];
    },
    path: "incidentOverrides[0].limit.capacity",
    message: "capacity 100000 against 5000 in the limit it replaces would raise the limit 20x",
  },
  {
    name: "an absolute limit whose rate is above the guardrail",
    edit: (input) => {
      input.incidentOverrides = [{ ...incident, factor: null, limit: tokenBucket(5000, 20_000) }];
    },
    path: "incidentOverrides[0].limit.refillPerSec",
    message:
      "a sustained rate of 20000/s against 1000/s in the limit it replaces would raise the limit 20x",
  },
  {
    name: "a factor where there is no limit to scale",
    edit: (input) => {
      input.incidentOverrides = [{ ...incident, endpointClass: "search" }];
    },
    path: "incidentOverrides[0].factor",
    message:
      "there is no enforced limit here for a factor to scale; give an absolute limit instead",
  },
  {
    name: "both a factor and a limit",
    edit: (input) => {
      input.incidentOverrides = [{ ...incident, limit: tokenBucket(6000, 1000) }];
    },
    path: "incidentOverrides[0].limit",
    message: "give either a factor or an absolute limit, not both",
  },
  {
    name: "neither a factor nor a limit",
    edit: (input) => {
      input.incidentOverrides = [{ ...incident, factor: null }];
    },
    path: "incidentOverrides[0].factor",
    message: "give either a factor",
  },
  {
    name: "a zero factor",
    edit: (input) => {
      input.incidentOverrides = [{ ...incident, factor: 0 }];
    },
    path: "incidentOverrides[0].factor",
    message: "factor must be more than 0",
  },
  {
    name: "a ticket link that is not http or https",
    edit: (input) => {
      input.incidentOverrides = [{ ...incident, ticketUrl: "javascript:alert(1)" }];
    },
    path: "incidentOverrides[0].ticketUrl",
    message: "ticketUrl must be an http:// or https:// URL",
  },
  {
    name: "an instant without a time zone",
    edit: (input) => {
      input.incidentOverrides = [{ ...incident, startsAt: "2025-06-03T09:00:00" }];
    },
    path: "incidentOverrides[0].startsAt",
    message: "must be an ISO 8601 instant with a time zone",
  },
  {
    name: "an impossible date",
    edit: (input) => {
      input.incidentOverrides = [{ ...incident, startsAt: "2025-02-30T09:00:00Z" }];
    },
    path: "incidentOverrides[0].startsAt",
    message: "must be an ISO 8601 instant",
  },
  {
    name: "overlapping incidents for one customer and scope",
    edit: (input) => {
      input.incidentOverrides?.push({
        ...incident,
        id: "inc-overlap",
        startsAt: "2025-06-02T20:00:00Z",
        expiresAt: "2025-06-02T23:00:00Z",
      });
    },
    path: "incidentOverrides[1].startsAt",
    message: 'overlaps incident "inc-2025-06-02-acme"',
  },
  {
    name: "a duplicate incident id",
    edit: (input) => {
      input.incidentOverrides?.push({ ...incident, id: "inc-2025-06-02-acme" });
    },
    path: "incidentOverrides[1].id",
    message: 'incident id "inc-2025-06-02-acme" is already used by incidentOverrides[0]',
  },
  {
    name: "a customer on an undefined tier",
    edit: (input) => {
      input.customers?.push({ id: "newco", displayName: "NewCo", tier: "gold" });
    },
    path: "customers[4].tier",
    message: 'there is no tier "gold"',
  },
  {
    name: "an undefined default tier",
    edit: (input) => {
      input.defaultTier = "basic";
    },
    path: "defaultTier",
    message: 'defaultTier names tier "basic", which is not defined',
  },
  {
    name: "an undefined default endpoint class",
    edit: (input) => {
      input.defaultEndpointClass = "misc";
    },
    path: "defaultEndpointClass",
    message: 'endpoint class "misc", which is not defined',
  },
  {
    name: "a tier defined twice",
    edit: (input) => {
      input.tiers.push({ name: "pro", limit: tokenBucket(10, 1) });
    },
    path: "tiers[3].name",
    message: 'tier "pro" is already defined at tiers[1]',
  },
  {
    name: "one method and path claimed by two classes",
    edit: (input) => {
      input.endpointClasses.push({
        name: "exports",
        match: [{ method: "GET", path: "/v1/reports/**" }],
      });
    },
    path: "endpointClasses[4].match[0]",
    message:
      'GET /v1/reports/** is already matched by endpoint class "reports" (endpointClasses[2].match[0])',
  },
  {
    name: "an invalid path pattern",
    edit: (input) => {
      input.endpointClasses.push({
        name: "exports",
        match: [{ method: "GET", path: "/v1/**/rows" }],
      });
    },
    path: "endpointClasses[4].match[0].path",
    message: '"**" may only be the last segment',
  },
  {
    name: "a lower-case method",
    edit: (input) => {
      input.endpointClasses.push({
        name: "exports",
        match: [{ method: "get", path: "/v1/exports" }],
      });
    },
    path: "endpointClasses[4].match[0].method",
    message: "method must be an upper-case HTTP method",
  },
  {
    name: "a fractional cost",
    edit: (input) => {
      input.endpointClasses.push({ name: "exports", cost: 1.5 });
    },
    path: "endpointClasses[4].cost",
    message: "cost must be a whole number, not 1.5",
  },
  {
    name: "a cost no limit can hold",
    edit: (input) => {
      input.endpointClasses.push({ name: "exports", cost: 50 });
    },
    path: "tiers[0].limit.capacity",
    message: 'capacity 20 is less than the 50 units one request to endpoint class "exports" costs',
  },
  {
    name: "a per-tier limit keyed by an invalid tier name",
    edit: (input) => {
      set(input, ["endpointClasses", 2, "limits", "Pro"], tokenBucket(10, 1));
    },
    path: "endpointClasses[2].limits.Pro",
    message: "tier must be 1 to 63 characters",
  },
  {
    name: "a per-tier limit for an undefined tier",
    edit: (input) => {
      set(input, ["endpointClasses", 2, "limits", "gold"], tokenBucket(10, 1));
    },
    path: "endpointClasses[2].limits.gold",
    message: 'there is no tier "gold"; define it under tiers or remove this limit',
  },
  {
    name: "an override for a customer not in the registry",
    edit: (input) => {
      input.customerOverrides?.push({
        customerId: "ghost",
        endpointClass: null,
        limit: tokenBucket(10, 1),
      });
    },
    path: "customerOverrides[1].customerId",
    message: 'there is no customer "ghost" in customers',
  },
  {
    name: "an override for an undefined endpoint class",
    edit: (input) => {
      input.customerOverrides?.push({
        customerId: "acme",
        endpointClass: "exports",
        limit: tokenBucket(10, 1),
      });
    },
    path: "customerOverrides[1].endpointClass",
    message: 'there is no endpoint class "exports"',
  },
  {
    name: "two overrides for one customer and scope",
    edit: (input) => {
      input.customerOverrides?.push({
        customerId: "globex",
        endpointClass: "reports",
        limit: tokenBucket(10, 1),
      });
    },
    path: "customerOverrides[1]",
    message: "customerOverrides[0] already overrides this customer for the same scope",
  },
  {
    name: "a candidate targeting a customer override",
    edit: (input) => {
      input.dryRunCandidates = [{ id: "c1", target: "customer:acme", limit: tokenBucket(10, 1) }];
    },
    path: "dryRunCandidates[0].target",
    message: "target must be the scope the candidate would replace",
  },
  {
    name: "a candidate for an undefined tier",
    edit: (input) => {
      input.dryRunCandidates = [{ id: "c1", target: "tier:gold", limit: tokenBucket(10, 1) }];
    },
    path: "dryRunCandidates[0].target",
    message: 'there is no tier "gold"',
  },
  {
    name: "a guardrail factor that allows nothing",
    edit: (input) => {
      input.guardrails = { maxIncidentFactor: 1 };
    },
    path: "guardrails.maxIncidentFactor",
    message: "maxIncidentFactor must be more than 1",
  },
  {
    name: "an unknown document format",
    edit: (input) => {
      set(input, ["schemaVersion"], 2);
    },
    path: "schemaVersion",
    message: "schemaVersion must be 1",
  },
  {
    name: "no tiers",
    edit: (input) => {
      input.tiers = [];
    },
    path: "tiers",
    message: "define at least one tier",
  },
  {
    name: "global set to false",
    edit: (input) => {
      set(input, ["tiers", 0, "limit", "global"], false);
    },
    path: "tiers[0].limit.global",
    message: "global must be true, or left out for a limit each region enforces in full",
  },
  {
    name: "a global window limit",
    edit: (input) => {
      input.tiers[0] = {
        name: "free",
        limit: { algorithm: "fixed-window", limit: 100, windowMs: 60_000, global: true },
      };
    },
    path: "tiers[0].limit.global",
    message: "global applies only to token-bucket limits, not fixed-window",
  },
  {
    name: "a global customer override",
    edit: (input) => {
      set(input, ["customerOverrides", 0, "limit", "global"], true);
    },
    path: "customerOverrides[0].limit.global",
    message: "global applies only to tier limits and ceilings",
  },
  {
    name: "a global per-address ceiling",
    edit: (input) => {
      set(input, ["ceilings", "perAddress", "global"], true);
    },
    path: "ceilings.perAddress.global",
    message: "global applies only to tier limits and ceilings",
  },
];

describe("ZPolicyDocument refuses", () => {
  it.each(invalid)("$name at $path", ({ edit, path, message }) => {
    const input = examplePolicyInput();
    edit(input);
    const result = parsePolicyDocument(input);
    expect(result.ok).toBe(false);
    const errors = result.ok ? [] : result.errors;
    const atPath = errors.filter((error) => formatFieldPath(error.path) === path);
    expect(atPath.map((error) => error.message)).toContainEqual(expect.stringContaining(message));
  });

  it("reports a number too large to be a safe integer once, as too large", () => {
    const input = examplePolicyInput();
    set(input, ["tiers", 0, "limit", "capacity"], 1e20);
    const result = parsePolicyDocument(input);
    expect(result).toEqual({
      ok: false,
      errors: [
        { path: ["tiers", 0, "limit", "capacity"], message: "capacity must be at most 1000000000" },
      ],
    });
  });

  it("refuses input that is not an object, at the root", () => {
    const result = parsePolicyDocument(null);
    expect(result).toEqual({
      ok: false,
      errors: [
        {
          path: [],
          message: expect.stringContaining("expected an object with the fields: schemaVersion"),
        },
      ],
    });
  });
});

describe("ZPolicyDocument accepts", () => {
  it("the example policy, filling in every default", () => {
    const result = parsePolicyDocument(examplePolicyInput());
    if (!result.ok) throw new Error(JSON.stringify(result.errors));
    const doc = result.value;
    expect(doc.tiers[0]?.limit).toEqual({
      ...tokenBucket(20, 10),
      mode: "enforce",
      onStoreFailure: "open",
    });
    expect(doc.ceilings.perCustomer.onStoreFailure).toBe("local");
    expect(doc.ceilings.perAddress.onStoreFailure).toBe("local");
    const signIn = doc.endpointClasses.find((c) => c.name === "sign-in");
    expect(signIn?.anonymousLimit?.onStoreFailure).toBe("closed");
    expect(signIn?.ceiling).toBeNull();
    const reports = doc.endpointClasses.find((c) => c.name === "reports");
    expect(reports?.ceiling?.onStoreFailure).toBe("local");
    expect(reports?.keyBy).toBe("address");
    expect(doc.endpointClasses[0]?.match).toEqual([]);
    expect(doc.incidentOverrides[0]?.startsAt).toBe("2025-06-02T09:00:00.000Z");
    expect(doc.incidentOverrides[0]?.limit).toBeNull();
    expect(doc.guardrails).toEqual({ maxIncidentFactor: 10, maxIncidentDurationMs: 86_400_000 });
  });

  it("normalises instants with an offset to UTC, and trims display names", () => {
    const input = examplePolicyInput();
    input.customers?.splice(0, 1, { id: "acme", displayName: "  Acme  ", tier: "enterprise" });
    input.incidentOverrides = [
      { ...incident, startsAt: "2025-06-03T11:00:00+02:00", expiresAt: "2025-06-03T12:00:00.5Z" },
    ];
    const doc = ZPolicyDocument.parse(input);
    expect(doc.customers[0]?.displayName).toBe("Acme");
    expect(doc.incidentOverrides[0]?.startsAt).toBe("2025-06-03T09:00:00.000Z");
    expect(doc.incidentOverrides[0]?.expiresAt).toBe("2025-06-03T12:00:00.500Z");
  });

  it("a minimal policy: one tier, one class, the ceilings", () => {
    const doc = ZPolicyDocument.parse({
      defaultTier: "basic",
      defaultEndpointClass: "all",
      tiers: [{ name: "basic", limit: tokenBucket(10, 1) }],
      endpointClasses: [{ name: "all" }],
      ceilings: { perCustomer: tokenBucket(100, 10), perAddress: tokenBucket(50, 5) },
    });
    expect(doc.customers).toEqual([]);
    expect(doc.endpointClasses[0]?.cost).toBe(1);
  });

  it("generates a JSON Schema of its input, for the OpenAPI document", () => {
    const schema = z.toJSONSchema(ZPolicyDocument, { io: "input" });
    expect(schema).toMatchObject({ type: "object", additionalProperties: false });
    expect(JSON.stringify(z.toJSONSchema(ZLimitSpec, { io: "input" }))).toContain('"token-bucket"');
  });
});

describe("findReplacedLimit", () => {
  const doc = ZPolicyDocument.parse(examplePolicyInput());

  it.each([
    ["acme", null, 5000],
    ["acme", "reports", 1000],
    ["globex", "reports", 300],
    ["globex", null, 200],
  ] as const)("%s on %s replaces a limit of capacity %d", (customerId, endpointClass, capacity) => {
    expect(findReplacedLimit(doc, customerId, endpointClass)).toMatchObject({ capacity });
  });

  it("is null where nothing is enforced", () => {
    expect(findReplacedLimit(doc, "acme", "search")).toBeNull();
    expect(findReplacedLimit(doc, "ghost", null)).toBeNull();
  });
});
