import { describe, expect, it } from "vitest";
import { compileEntries } from "../entries";
import example from "../fixtures/example-policy.json";
import { prepareSnapshot } from "../prepare";
import { compileSnapshot } from "../snapshot";
import { DEFAULT_DESCRIPTOR_MAPPINGS, ZDescriptorMapping } from "./descriptor-mappings";
import { parsePolicyDocument, type TPolicyDocument } from "./document";

describe("descriptor mappings in the policy", () => {
  it("a mapping written with only its domain takes Envoy's usual entry keys and ignores overrides", () => {
    expect(ZDescriptorMapping.parse({ domain: "edge" })).toEqual({
      domain: "edge",
      customer: "customer_id",
      tier: "tier",
      method: "method",
      path: "path",
      endpointClass: "endpoint_class",
      clientAddress: "remote_address",
      limitOverride: "ignore",
    });
    expect(DEFAULT_DESCRIPTOR_MAPPINGS).toEqual([ZDescriptorMapping.parse({ domain: "*" })]);
  });

  it.each([
    [{ domain: "" }, "domain", "domain must not be empty"],
    [{ domain: "a b" }, "domain", "domain must be printable ASCII without spaces"],
    [
      { domain: "a", tier: "customer_id" },
      "tier",
      'entry key "customer_id" is already mapped to customer; an entry gives one thing',
    ],
    [
      { domain: "a", customer: null, clientAddress: null },
      "customer",
      "map at least one of customer and clientAddress: they say whose budget is spent",
    ],
    [{ domain: "a", path: "" }, "path", "path must not be empty (null: not mapped)"],
    [{ domain: "a", path: 3 }, "path", "path must be a descriptor entry key (text) or null"],
    [
      { domain: "a", limitOverride: "yes" },
      "limitOverride",
      "limitOverride must be one of: ignore, apply",
    ],
    [
      { domain: "a", extra: 1 },
      "",
      "expected only: domain, customer, tier, method, path, endpointClass, clientAddress, limitOverride",
    ],
  ])("refuses %j at %s", (input, path, message) => {
    const parsed = ZDescriptorMapping.safeParse(input);
    expect(parsed.success).toBe(false);
    expect(parsed.error?.issues[0]?.path.join(".")).toBe(path);
    expect(parsed.error?.issues[0]?.message).toBe(message);
  });

  it("a domain mapped twice is refused at the later one", () => {
    const parsed = parsePolicyDocument({
      ...example,
      descriptorMappings: [{ domain: "edge" }, { domain: "*" }, { domain: "edge" }],
    });
    expect(parsed.ok).toBe(false);
    expect(parsed.ok ? [] : parsed.errors).toEqual([
      {
        path: ["descriptorMappings", 2, "domain"],
        message: 'domain "edge" is already mapped by descriptorMappings[0]',
      },
    ]);
  });
});

describe("descriptor mappings are published with the settings", () => {
  const parse = (input: unknown): TPolicyDocument => {
    const parsed = parsePolicyDocument(input);
    if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
    return parsed.value;
  };
  const compiledAt = "2026-01-01T00:00:00.000Z";

  it("a policy without mappings keeps its settings entry and maps every domain by default", () => {
    const doc = parse(example);
    const settings = compileEntries(doc, 0).find((entry) => entry.kind === "settings");
    expect(Object.keys(settings?.value ?? {}).sort()).toEqual([
      "ceilings",
      "defaultEndpointClass",
      "defaultTier",
    ]);
    const prepared = prepareSnapshot(compileSnapshot(doc, { version: 1, compiledAt }));
    expect([...prepared.descriptorMappings.keys()]).toEqual(["*"]);
  });

  it("a policy's mappings reach the prepared snapshot, every field explicit", () => {
    const doc = parse({
      ...example,
      descriptorMappings: [{ domain: "edge", tier: null, limitOverride: "apply" }],
    });
    const snapshot = compileSnapshot(doc, { version: 2, compiledAt });
    expect(snapshot.policy.descriptorMappings).toEqual([
      { ...ZDescriptorMapping.parse({ domain: "edge" }), tier: null, limitOverride: "apply" },
    ]);
    const prepared = prepareSnapshot(snapshot);
    expect(prepared.descriptorMappings.get("edge")?.limitOverride).toBe("apply");
    expect(prepared.descriptorMappings.has("*")).toBe(false);
  });
});
