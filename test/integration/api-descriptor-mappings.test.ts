/**
 * The descriptor mappings through the API: they are part of the policy, so a change is one audited
 * policy change (one audit entry, a new version whose settings entry carries them), export writes
 * them and import reads them back. Hostile input is refused by field, writing nothing.
 */
import { describe, expect, it } from "vitest";
import { type CallOptions, provideApiHarness } from "./helpers/api-harness";

const api = provideApiHarness();
const admin = () => ({ token: api.as("admin").token });
const viewer = () => ({ token: api.as("viewer").token });
const PATH = "/api/v1/descriptor-mappings";

const DEFAULT_STAR = {
  domain: "*",
  customer: "customer_id",
  tier: "tier",
  method: "method",
  path: "path",
  endpointClass: "endpoint_class",
  clientAddress: "remote_address",
  limitOverride: "ignore",
};

async function currentVersion(): Promise<number> {
  const current = await api.call("GET", PATH, { as: viewer() });
  expect(current.status, current.text).toBe(200);
  return current.body.descriptorMappings.version;
}

/** Everything a refused change could have written. */
async function writtenState() {
  const row = await api.db().policySettings.findUniqueOrThrow({
    where: { id: 1 },
    select: { descriptorMappings: true, descriptorMappingsVersion: true },
  });
  return { row, everything: await api.fingerprint() };
}

async function refusedWith(options: CallOptions, status: number, code: string) {
  const before = await writtenState();
  const response = await api.call("PUT", PATH, options);
  expect(response.status, response.text).toBe(status);
  expect(response.body.error.code).toBe(code);
  expect(await writtenState()).toEqual(before);
  return response.body.error;
}

describe("descriptor mappings", () => {
  it("GET 200: none stored, so every domain has the default mapping; 401 without a token", async () => {
    const response = await api.call("GET", PATH, { as: viewer() });
    expect(response.status, response.text).toBe(200);
    expect(response.body.descriptorMappings).toEqual({
      mappings: null,
      effective: [DEFAULT_STAR],
      version: 1,
    });
    const anonymous = await api.call("GET", PATH, {});
    expect(anonymous.status).toBe(401);
  });

  it("PUT 200: one audit entry and a policy version whose settings carry the mappings; export shows them", async () => {
    const version = await currentVersion();
    const response = await api.call("PUT", PATH, {
      as: admin(),
      body: {
        expectedVersion: version,
        descriptorMappings: [
          { domain: "edge", customer: "x-api-key", tier: null, limitOverride: "apply" },
          { domain: "*", clientAddress: "client_ip", customer: null },
        ],
        reason: "map the edge proxy's API key header",
      },
    });
    expect(response.status, response.text).toBe(200);
    const mappings = response.body.descriptorMappings;
    expect(mappings.version).toBe(version + 1);
    expect(mappings.mappings).toEqual([
      {
        ...DEFAULT_STAR,
        domain: "edge",
        customer: "x-api-key",
        tier: null,
        limitOverride: "apply",
      },
      { ...DEFAULT_STAR, customer: null, clientAddress: "client_ip" },
    ]);
    expect(mappings.effective).toEqual(mappings.mappings);
    expect(response.body.policyVersion).toEqual(expect.any(Number));

    const entry = await api.db().auditEntry.findFirstOrThrow({
      where: { id: BigInt(response.body.auditEntryId) },
    });
    expect(entry).toMatchObject({
      action: "descriptor-mapping.update",
      entityType: "descriptor-mapping",
      entityId: "descriptor-mappings",
      actorType: "token",
      reason: "map the edge proxy's API key header",
      before: { mappings: null, version },
      after: { mappings: mappings.mappings, version: version + 1 },
      policyVersion: response.body.policyVersion,
    });
    const settings = await api.db().policyEntry.findFirstOrThrow({ where: { key: "settings" } });
    expect(JSON.parse(settings.value).descriptorMappings).toEqual(
      [...mappings.mappings].sort((a, b) => (a.domain < b.domain ? -1 : 1)),
    );

    const exported = await api.call("GET", "/api/v1/policy/export", { as: viewer() });
    expect(JSON.parse(exported.text).descriptorMappings).toEqual([
      mappings.mappings[1],
      mappings.mappings[0],
    ]);
  });

  it("import carries the mappings: a document without them goes back to the default", async () => {
    const exported = await api.call("GET", "/api/v1/policy/export", { as: viewer() });
    const document = JSON.parse(exported.text);
    const changed = {
      ...document,
      descriptorMappings: [{ domain: "internal", path: null, method: null }],
    };
    const imported = await api.call("POST", "/api/v1/policy/import?reason=new%20mappings", {
      as: admin(),
      body: changed,
    });
    expect(imported.status, imported.text).toBe(200);
    const read = await api.call("GET", PATH, { as: viewer() });
    expect(read.body.descriptorMappings.mappings).toEqual([
      { ...DEFAULT_STAR, domain: "internal", path: null, method: null },
    ]);

    const { descriptorMappings: _gone, ...without } = document;
    const reset = await api.call("POST", "/api/v1/policy/import?reason=defaults", {
      as: admin(),
      body: without,
    });
    expect(reset.status, reset.text).toBe(200);
    const after = await api.call("GET", PATH, { as: viewer() });
    expect(after.body.descriptorMappings).toMatchObject({
      mappings: null,
      effective: [DEFAULT_STAR],
    });
  });

  it("PUT null goes back to the default for every domain", async () => {
    const version = await currentVersion();
    const set = await api.call("PUT", PATH, {
      as: admin(),
      body: { expectedVersion: version, descriptorMappings: [{ domain: "a" }], reason: "one" },
    });
    expect(set.status, set.text).toBe(200);
    const cleared = await api.call("PUT", PATH, {
      as: admin(),
      body: { expectedVersion: version + 1, descriptorMappings: null, reason: "defaults again" },
    });
    expect(cleared.status, cleared.text).toBe(200);
    expect(cleared.body.descriptorMappings).toMatchObject({
      mappings: null,
      effective: [DEFAULT_STAR],
    });
  });

  it.each([
    [
      "a domain mapped twice",
      [{ domain: "edge" }, { domain: "edge" }],
      "descriptorMappings[1].domain",
      'domain "edge" is already mapped by descriptorMappings[0]',
    ],
    [
      "an entry key with a space",
      [{ domain: "edge", customer: "api key" }],
      "descriptorMappings[0].customer",
      "customer must be printable ASCII without spaces",
    ],
    [
      "one entry giving two things",
      [{ domain: "edge", tier: "customer_id" }],
      "descriptorMappings[0].tier",
      'entry key "customer_id" is already mapped to customer; an entry gives one thing',
    ],
    [
      "nobody whose budget is spent",
      [{ domain: "edge", customer: null, clientAddress: null }],
      "descriptorMappings[0].customer",
      "map at least one of customer and clientAddress: they say whose budget is spent",
    ],
    [
      "an unknown override mode",
      [{ domain: "edge", limitOverride: "always" }],
      "descriptorMappings[0].limitOverride",
      "limitOverride must be one of: ignore, apply",
    ],
    [
      "a 1 MB domain",
      [{ domain: "d".repeat(1_000_000) }],
      "descriptorMappings[0].domain",
      "domain takes at most 128 characters",
    ],
    [
      "101 mappings",
      Array.from({ length: 101 }, (_, index) => ({ domain: `d${index}` })),
      "descriptorMappings",
      "a policy takes at most 100 descriptor mappings",
    ],
    [
      "not a list",
      { domain: "edge" },
      "descriptorMappings",
      "descriptorMappings must be a list of domain mappings",
    ],
  ])(
    "PUT 400 for %s, naming the field; nothing written",
    async (_name, mappings, path, message) => {
      const error = await refusedWith(
        {
          as: admin(),
          body: {
            expectedVersion: await currentVersion(),
            descriptorMappings: mappings,
            reason: "hostile",
          },
        },
        400,
        "VALIDATION_FAILED",
      );
      expect(error.fieldErrors).toContainEqual({ path, message });
    },
  );

  it("PUT 400 for an unknown field; 409 for a stale version; 403 for a viewer; nothing written", async () => {
    const version = await currentVersion();
    const unknown = await refusedWith(
      {
        as: admin(),
        body: {
          expectedVersion: version,
          descriptorMappings: [{ domain: "edge", customer_id: "x" }],
          reason: "typo",
        },
      },
      400,
      "VALIDATION_FAILED",
    );
    expect(unknown.fieldErrors[0].path).toBe("descriptorMappings[0].customer_id");
    await refusedWith(
      {
        as: admin(),
        body: { expectedVersion: version + 5, descriptorMappings: null, reason: "stale" },
      },
      409,
      "VERSION_CONFLICT",
    );
    await refusedWith(
      {
        as: viewer(),
        body: { expectedVersion: version, descriptorMappings: null, reason: "not mine" },
      },
      403,
      "FORBIDDEN",
    );
  });
});
