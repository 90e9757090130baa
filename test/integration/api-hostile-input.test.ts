/**
 * Hostile input on every route that takes a body, generated from the endpoint registry: for each,
 * a valid body is taken apart leaf by leaf (wrong types, huge, negative and fractional numbers,
 * control and bidirectional characters, oversized text), the body as a whole is replaced (malformed
 * JSON, nesting beyond the limit, unknown fields, not an object, oversized, the wrong media type),
 * and fast-check throws random JSON at it. Every answer must be a 4xx with an error code and a
 * message that names the problem; never a 500; and nothing may be written.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { AnyEndpoint } from "@/lib/api/endpoint";
import { ENDPOINTS } from "@/lib/api/endpoints";
import { DEFAULT_MAX_BODY_BYTES, MAX_JSON_DEPTH } from "@/lib/api/read-json";
import { ERROR_CODES } from "@/lib/control/errors";
import { examplePolicyForSeed } from "../../scripts/seed";
import {
  type ApiResponse,
  type CallOptions,
  type Credential,
  provideApiHarness,
} from "./helpers/api-harness";
import { samplePath } from "./helpers/api-samples";

const api = provideApiHarness();

const bucket = { algorithm: "token-bucket", capacity: 100, refillPerSec: 10 };

/** A valid body per route: the starting point every mutation breaks one way. */
function validBody(endpoint: AnyEndpoint): unknown {
  const key = `${endpoint.method} ${endpoint.path}`;
  const versioned = { expectedVersion: 1, reason: "a valid reason" };
  const bodies: Record<string, unknown> = {
    "POST /api/v1/auth/sign-in": { email: "admin@limitplane.test", password: "not the password" },
    "POST /api/v1/auth/password": {
      currentPassword: "not the password",
      newPassword: "a long new passphrase",
    },
    "POST /api/v1/operators": {
      email: "new@limitplane.test",
      name: "New Person",
      role: "viewer",
      password: "a long enough password",
      reason: "a valid reason",
    },
    "PATCH /api/v1/operators/{id}": {
      ...versioned,
      email: "x@limitplane.test",
      name: "X",
      role: "viewer",
    },
    "POST /api/v1/operators/{id}/password": { ...versioned, password: "a long enough password" },
    "POST /api/v1/tokens": {
      name: "ci",
      role: "viewer",
      expiresAt: "2099-01-01T00:00:00Z",
      reason: "a valid reason",
    },
    "POST /api/v1/tiers": { name: "gold", displayName: "Gold", limit: bucket, reason: "r" },
    "PATCH /api/v1/tiers/{name}": { ...versioned, displayName: "Free!", limit: bucket },
    "POST /api/v1/endpoint-classes": {
      name: "exports",
      displayName: "Exports",
      match: [{ method: "GET", path: "/v1/exports/**" }],
      cost: 2,
      limits: { pro: bucket },
      anonymousLimit: bucket,
      ceiling: bucket,
      keyBy: "address",
      reason: "r",
    },
    "PATCH /api/v1/endpoint-classes/{name}": { ...versioned, cost: 3, limits: { free: bucket } },
    "PATCH /api/v1/settings": {
      ...versioned,
      defaultTier: "free",
      ceilings: { perCustomer: { ...bucket, capacity: 20000 } },
      guardrails: { maxIncidentFactor: 5, maxIncidentDurationMs: 3_600_000 },
    },
    "POST /api/v1/customers": { id: "new-co", displayName: "New Co", tier: "free", reason: "r" },
    "PATCH /api/v1/customers/{id}": { ...versioned, displayName: "Globex!", tier: "free" },
    "POST /api/v1/customers/{id}/overrides": {
      endpointClass: "search",
      limit: bucket,
      reason: "r",
    },
    "PATCH /api/v1/customers/{id}/overrides/account": { ...versioned, limit: bucket },
    "PATCH /api/v1/customers/{id}/overrides/endpoints/{endpointClass}": {
      ...versioned,
      limit: bucket,
    },
    "POST /api/v1/incidents": {
      customerId: "initech",
      endpointClass: "search",
      factor: 2,
      durationMs: 600_000,
      owner: "dana",
      ticketUrl: "https://tickets.example.com/1",
      reason: "r",
    },
    "POST /api/v1/incidents/{id}/extend": { ...versioned, durationMs: 86_000_000 },
    "POST /api/v1/candidates": { id: "cand-new", target: "tier:pro", limit: bucket, reason: "r" },
    "PATCH /api/v1/candidates/{id}": { ...versioned, target: "tier:pro", limit: bucket },
    "POST /api/v1/policy/import": examplePolicyForSeed(Date.now()),
    "PATCH /api/v1/approval-settings": {
      expectedVersion: 0,
      limitDecreasePercent: 30,
      importChangedEntries: 50,
      requestLifetimeMs: 3_600_000,
      reason: "r",
    },
    "POST /api/v1/change-requests": {
      change: { kind: "tier.update", name: "free", expectedVersion: 1, limit: bucket },
      reason: "r",
    },
    "POST /api/v1/change-requests/{id}/approve": { expectedVersion: 1, reason: "looks right" },
  };
  return bodies[key] ?? versioned;
}

/** Leaves whose numbers count things: a fraction there is always wrong. */
const COUNT_FIELDS = new Set([
  "capacity",
  "limit",
  "burst",
  "windowMs",
  "cost",
  "expectedVersion",
  "durationMs",
  "maxIncidentDurationMs",
]);

type Path = readonly (string | number)[];

function leaves(value: unknown, path: Path = []): { path: Path; value: unknown }[] {
  if (Array.isArray(value)) return value.flatMap((item, index) => leaves(item, [...path, index]));
  if (typeof value === "object" && value !== null) {
    const entries = Object.entries(value);
    return entries.length === 0
      ? [{ path, value }]
      : entries.flatMap(([key, item]) => leaves(item, [...path, key]));
  }
  return [{ path, value }];
}

function replaced(value: unknown, path: Path, replacement: unknown): unknown {
  if (path.length === 0) return replacement;
  const [head, ...rest] = path;
  if (Array.isArray(value)) {
    return value.map((item, index) => (index === head ? replaced(item, rest, replacement) : item));
  }
  const record = value as Record<string, unknown>;
  return { ...record, [String(head)]: replaced(record[String(head)], rest, replacement) };
}

/** Values that must be refused in place of `value` at a leaf named `name`. */
function hostileValues(name: string, value: unknown): { label: string; value: unknown }[] {
  const out: { label: string; value: unknown }[] = [];
  if (typeof value === "string") {
    out.push({ label: "a number for text", value: 12345 });
    out.push({ label: "an object for text", value: { $ne: null } });
    out.push({ label: "control characters", value: `bad\u0000value\u001b[31m` });
    out.push({ label: "a bidirectional override", value: `evil\u202etxt.exe` });
    out.push({ label: "100k characters", value: "x".repeat(100_000) });
  } else if (typeof value === "number") {
    out.push({ label: "text for a number", value: "12" });
    out.push({ label: "a huge number", value: 1e300 });
    out.push({ label: "an unsafe integer", value: 2 ** 53 + 2 });
    out.push({ label: "a negative number", value: -1 });
    if (COUNT_FIELDS.has(name)) out.push({ label: "a fractional count", value: 2.5 });
  } else if (typeof value === "boolean") {
    out.push({ label: "text for a boolean", value: "yes" });
  } else if (value === null) {
    out.push({ label: "a number for null", value: 42 });
  } else {
    out.push({ label: "text for an object", value: "text" });
  }
  return out;
}

function deeplyNested(depth: number): unknown {
  let value: unknown = 1;
  for (let level = 0; level < depth; level++) value = [value];
  return value;
}

function credentialFor(endpoint: AnyEndpoint): Credential {
  return endpoint.access === "session" || endpoint.access === "public"
    ? { session: api.as("admin").session }
    : { token: api.as("admin").token };
}

/** The request's target: the import takes its reason in the query. */
function targetOf(endpoint: AnyEndpoint): string {
  const path = samplePath(endpoint, api);
  return endpoint.path === "/api/v1/policy/import" ? `${path}?reason=hostile` : path;
}

const SIGN_IN = "/api/v1/auth/sign-in";

/** A 4xx with a known code and a message; never a 5xx. */
function expectRefusal(response: ApiResponse, label: string): void {
  expect(response.status, `${label}: ${response.text.slice(0, 300)}`).toBeGreaterThanOrEqual(400);
  expect(response.status, `${label}: ${response.text.slice(0, 300)}`).toBeLessThan(500);
  expect(ERROR_CODES, label).toContain(response.body?.error?.code);
  expect(response.body.error.message.length, label).toBeGreaterThan(5);
  expect(response.text, label).not.toMatch(/\bat [\w.<>]+ \(|node_modules|PrismaClient/);
}

/** Field problems must be named by their field; sign-in may also just refuse the credentials. */
function expectFieldNamed(response: ApiResponse, endpoint: AnyEndpoint, path: Path, label: string) {
  if (endpoint.path === SIGN_IN && [401, 429].includes(response.status)) return;
  if (endpoint.path === "/api/v1/auth/password" && response.status === 429) return;
  expect(response.status, `${label}: ${response.text.slice(0, 300)}`).toBe(400);
  const top = String(path[0]);
  const named = response.body.error.fieldErrors.some(
    (error: { path: string }) =>
      error.path === top || error.path.startsWith(`${top}.`) || error.path.startsWith(`${top}[`),
  );
  // The import reports paths inside the document itself.
  expect(
    named || response.body.error.fieldErrors.length > 0,
    `${label}: ${response.text.slice(0, 300)}`,
  ).toBe(true);
  if (endpoint.path !== "/api/v1/policy/import") {
    expect(named, `${label} should name ${top}: ${response.text.slice(0, 300)}`).toBe(true);
  }
}

const withBody = ENDPOINTS.filter((endpoint) => endpoint.body !== undefined);

describe.each(
  withBody.map((endpoint) => [`${endpoint.method} ${endpoint.path}`, endpoint] as const),
)("hostile input: %s", (_label, endpoint) => {
  const call = (options: Omit<CallOptions, "as">) =>
    api.call(endpoint.method, targetOf(endpoint), { as: credentialFor(endpoint), ...options });

  it("every leaf of a valid body, broken each way: 400 naming the field, nothing written", async () => {
    const base = validBody(endpoint);
    const before = await api.fingerprint();
    let cases = 0;
    for (const leaf of leaves(base)) {
      const name = String(leaf.path.at(-1) ?? "");
      for (const hostile of hostileValues(name, leaf.value)) {
        const label = `${leaf.path.join(".")} = ${hostile.label}`;
        const response = await call({ body: replaced(base, leaf.path, hostile.value) });
        expectRefusal(response, label);
        expectFieldNamed(response, endpoint, leaf.path, label);
        cases++;
      }
    }
    expect(cases).toBeGreaterThan(0);
    expect(await api.fingerprint()).toEqual(before);
  });

  it("the body as a whole: malformed, too deep, unknown fields, not an object, too large, wrong type", async () => {
    const base = validBody(endpoint);
    const before = await api.fingerprint();
    const maxBytes = endpoint.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
    const cases: {
      label: string;
      options: Omit<CallOptions, "as">;
      status: number;
      code: string;
    }[] = [
      {
        label: "truncated JSON",
        options: { rawBody: JSON.stringify(base).slice(0, -1) },
        status: 400,
        code: "MALFORMED_JSON",
      },
      {
        label: "not JSON",
        options: { rawBody: "reason=x&expectedVersion=1" },
        status: 400,
        code: "MALFORMED_JSON",
      },
      { label: "an empty body", options: { rawBody: "" }, status: 400, code: "MALFORMED_JSON" },
      {
        label: "invalid UTF-8",
        options: { rawBody: '{"reason":"\udc00"}' },
        status: 400,
        code: "VALIDATION_FAILED",
      },
      {
        label: `nesting deeper than ${MAX_JSON_DEPTH}`,
        options: { body: { ...(base as object), nested: deeplyNested(MAX_JSON_DEPTH + 8) } },
        status: 400,
        code: "MALFORMED_JSON",
      },
      {
        label: "a declared length over the limit",
        options: { body: base, headers: { "content-length": String(maxBytes + 1) } },
        status: 413,
        code: "PAYLOAD_TOO_LARGE",
      },
      {
        label: "the wrong media type (a cross-site form's)",
        options: { body: base, headers: { "content-type": "application/x-www-form-urlencoded" } },
        status: 415,
        code: "UNSUPPORTED_MEDIA_TYPE",
      },
      {
        label: "text/plain",
        options: { body: base, headers: { "content-type": "text/plain" } },
        status: 415,
        code: "UNSUPPORTED_MEDIA_TYPE",
      },
    ];
    if (endpoint.path !== "/api/v1/policy/import") {
      cases.push(
        {
          label: "an unknown field",
          options: { body: { ...(base as object), isAdmin: true } },
          status: 400,
          code: "VALIDATION_FAILED",
        },
        { label: "an array", options: { body: [base] }, status: 400, code: "VALIDATION_FAILED" },
        { label: "null", options: { rawBody: "null" }, status: 400, code: "VALIDATION_FAILED" },
        {
          label: "a string",
          options: { rawBody: '"reason"' },
          status: 400,
          code: "VALIDATION_FAILED",
        },
        {
          label: "a body over the limit, streamed",
          options: { body: { ...(base as object), reason: "x".repeat(maxBytes) } },
          status: 413,
          code: "PAYLOAD_TOO_LARGE",
        },
      );
    } else {
      cases.push({
        label: "an unknown field in the document",
        options: { body: { ...(base as object), extra: true } },
        status: 400,
        code: "VALIDATION_FAILED",
      });
    }
    for (const { label, options, status, code } of cases) {
      const response = await call(options);
      expectRefusal(response, label);
      if (endpoint.path === SIGN_IN && response.status === 401) continue;
      expect(response.status, `${label}: ${response.text.slice(0, 300)}`).toBe(status);
      expect(response.body.error.code, label).toBe(code);
    }
    expect(await api.fingerprint()).toEqual(before);
  });

  it("random JSON bodies (fast-check): a 4xx, never a 500, nothing written", async () => {
    const before = await api.fingerprint();
    await fc.assert(
      fc.asyncProperty(fc.jsonValue({ maxDepth: 4 }), async (value) => {
        const response = await call({ body: value });
        expectRefusal(response, `body ${JSON.stringify(value).slice(0, 200)}`);
      }),
      { numRuns: 15, seed: 6 },
    );
    expect(await api.fingerprint()).toEqual(before);
  });

  it("one random leaf replaced by random JSON (fast-check): never a 500; a refusal writes nothing", async () => {
    const base = validBody(endpoint);
    const paths = leaves(base).map((leaf) => leaf.path);
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...paths),
        fc.jsonValue({ maxDepth: 2 }),
        async (path, value) => {
          const before = await api.fingerprint();
          const response = await call({ body: replaced(base, path, value) });
          expect(response.status, response.text.slice(0, 300)).toBeLessThan(500);
          if (response.status >= 400) {
            expectRefusal(response, `${path.join(".")} = ${JSON.stringify(value)}`);
            expect(await api.fingerprint()).toEqual(before);
          }
        },
      ),
      { numRuns: 15, seed: 6 },
    );
  });
});

describe("hostile path parameters", () => {
  const withParams = ENDPOINTS.filter((endpoint) => endpoint.path.includes("{"));
  it.each(withParams.map((endpoint) => [`${endpoint.method} ${endpoint.path}`, endpoint] as const))(
    "%s: a 4xx, never a 500, nothing written",
    async (_label, endpoint) => {
      const before = await api.fingerprint();
      for (const value of [
        "%00",
        "a%0Ab",
        "%E2%80%AE",
        "..%2F..%2Fetc",
        "x".repeat(300),
        "%F0%9F%92%A9",
      ]) {
        const path = endpoint.path.replace(/\{\w+\}/g, value);
        const response = await api.call(endpoint.method, path, {
          as: credentialFor(endpoint),
          body: endpoint.body === undefined ? undefined : validBody(endpoint),
        });
        expectRefusal(response, `${path}`);
      }
      expect(await api.fingerprint()).toEqual(before);
    },
  );
});

describe("hostile query strings", () => {
  const withQuery = ENDPOINTS.filter((endpoint) => endpoint.query !== undefined);
  it.each(withQuery.map((endpoint) => [`${endpoint.method} ${endpoint.path}`, endpoint] as const))(
    "%s: each parameter broken each way is a 4xx, never a 500",
    async (_label, endpoint) => {
      const before = await api.fingerprint();
      const shape = (endpoint.query as { shape?: Record<string, unknown> }).shape ?? {};
      const names = [...Object.keys(shape), "unknownParameter"];
      for (const name of names) {
        for (const value of [
          "%00",
          "a%0Ab",
          "%E2%80%AE",
          "x".repeat(5_000),
          "-1",
          "1e309",
          "%FF",
        ]) {
          const extra =
            endpoint.path === "/api/v1/policy/import" && name !== "reason" ? "&reason=r" : "";
          const response = await api.call(
            endpoint.method,
            `${samplePath(endpoint, api)}?${name}=${value}${extra}`,
            {
              as: credentialFor(endpoint),
              body: endpoint.body === undefined ? undefined : { not: "a policy" },
            },
          );
          // A value that happens to be valid (a search for "-1") is fine; a 500 never is.
          expect(
            response.status,
            `${name}=${value.slice(0, 20)}: ${response.text.slice(0, 300)}`,
          ).toBeLessThan(500);
          if (response.status >= 400) expectRefusal(response, `${name}=${value.slice(0, 20)}`);
        }
        const repeated = await api.call(
          endpoint.method,
          `${samplePath(endpoint, api)}?${name}=a&${name}=b`,
          { as: credentialFor(endpoint), body: endpoint.body === undefined ? undefined : {} },
        );
        expectRefusal(repeated, `${name} given twice`);
      }
      expect(await api.fingerprint()).toEqual(before);
    },
  );
});
