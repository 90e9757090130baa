import { DEFAULT_DESCRIPTOR_MAPPINGS, ZDescriptorMapping } from "@limitplane/enforcer/policy";
import { describe, expect, it } from "vitest";
import { limitOverrideOf, requestOfDescriptor } from "./descriptor-mapping";
import { parseRateLimitRequest, ZRateLimitRequest } from "./rls-request";

const entries = (...pairs: [string, string][]) => pairs.map(([key, value]) => ({ key, value }));
const valid = {
  domain: "edge",
  descriptors: [{ entries: entries(["customer_id", "acme"]), limit: null }],
  hits_addend: 0,
};

describe("parseRateLimitRequest refuses hostile input by field", () => {
  it.each([
    ["a missing domain", { ...valid, domain: "" }, "domain", "is required"],
    [
      "no descriptors",
      { ...valid, descriptors: [] },
      "descriptors",
      "must hold at least one descriptor",
    ],
    [
      "10,000 descriptors",
      { ...valid, descriptors: Array.from({ length: 10_000 }, () => valid.descriptors[0]) },
      "descriptors",
      "take at most 64 descriptors, got 10000",
    ],
    [
      "a 1 MB value",
      { ...valid, descriptors: [{ entries: entries(["customer_id", "x".repeat(1_000_000)]) }] },
      "descriptors[0].entries[0].value",
      "takes at most 4096 characters",
    ],
    [
      "bytes that were not UTF-8",
      { ...valid, descriptors: [{ entries: entries(["path", "/a\uFFFDb"]) }] },
      "descriptors[0].entries[0].value",
      "is not valid UTF-8",
    ],
    [
      "an empty key",
      { ...valid, descriptors: [{ entries: entries(["", "v"]) }] },
      "descriptors[0].entries[0].key",
      "must not be empty",
    ],
    [
      "a descriptor without entries",
      { ...valid, descriptors: [{ entries: [] }] },
      "descriptors[0].entries",
      "must hold at least one entry",
    ],
    [
      "a huge hits_addend (a negative one arrives as 4294967295)",
      { ...valid, hits_addend: 4_294_967_295 },
      "hits_addend",
      "must be at most 1000000",
    ],
    [
      "a negative hits_addend",
      { ...valid, hits_addend: -1 },
      "hits_addend",
      "must not be negative",
    ],
  ])("%s", (_name, raw, field, message) => {
    expect(parseRateLimitRequest(raw)).toEqual({ ok: false, field, message });
  });

  it("a request Envoy sends is accepted, with the limit override kept for counting", () => {
    const parsed = parseRateLimitRequest({
      ...valid,
      descriptors: [
        {
          entries: entries(["customer_id", "acme"]),
          limit: { requests_per_unit: 5, unit: "MINUTE" },
        },
      ],
    });
    expect(parsed.ok && parsed.request.descriptors[0]?.limit).toEqual({
      requests_per_unit: 5,
      unit: "MINUTE",
    });
  });
});

describe("parseRateLimitRequest accepts exactly what the schema accepts", () => {
  const many = Array.from({ length: 64 }, () => ({ entries: entries(["k", "v"]), limit: null }));
  it.each([
    ["a usual request", valid],
    ["64 descriptors", { ...valid, descriptors: many }],
    ["the largest hits_addend", { ...valid, hits_addend: 1_000_000 }],
    [
      "a limit override",
      {
        ...valid,
        descriptors: [
          { entries: entries(["a", "b"]), limit: { requests_per_unit: 3, unit: "HOUR" } },
        ],
      },
    ],
    ["a missing hits_addend", { domain: "edge", descriptors: valid.descriptors }],
    [
      "a long value",
      { ...valid, descriptors: [{ entries: entries(["path", "/".repeat(4_096)]) }] },
    ],
  ])("%s", (_name, raw) => {
    const parsed = parseRateLimitRequest(raw);
    expect(parsed).toEqual({ ok: true, request: ZRateLimitRequest.parse(raw) });
  });
});

describe("requestOfDescriptor maps entries onto the policy's request", () => {
  const mapping = DEFAULT_DESCRIPTOR_MAPPINGS[0] ?? null;

  it.each([
    [
      "customer, tier, method and path",
      entries(
        ["customer_id", "acme"],
        ["tier", "pro"],
        ["method", "post"],
        ["path", "/v1/reports"],
      ),
      {
        kind: "request",
        request: {
          customerId: "acme",
          tier: "pro",
          method: "POST",
          path: "/v1/reports",
          clientAddress: null,
          cost: 3,
        },
      },
    ],
    [
      "an address alone (anonymous), IPv6 keyed by its /64",
      entries(["remote_address", "2001:db8::1"]),
      {
        kind: "request",
        request: {
          customerId: null,
          tier: null,
          method: "GET",
          path: "/",
          clientAddress: "2001:db8:0:0::/64",
          cost: 3,
        },
      },
    ],
    [
      "keys the mapping does not know: uncovered, with its keys",
      entries(["generic_key", "checkout"], ["header_match", "premium"]),
      { kind: "uncovered", keys: "generic_key,header_match" },
    ],
    [
      "a malformed customer id",
      entries(["customer_id", "has space"]),
      {
        kind: "invalid",
        field: "descriptors[1].entries[0].value",
        message: "is not a customer id (letters, digits and ._:@-, at most 128)",
      },
    ],
    [
      "an address that is not one",
      entries(["remote_address", "not-an-ip"]),
      {
        kind: "invalid",
        field: "descriptors[1].entries[0].value",
        message: "is not an IP address",
      },
    ],
    [
      "a path without its slash",
      entries(["customer_id", "acme"], ["path", "v1"]),
      {
        kind: "invalid",
        field: "descriptors[1].entries[1].value",
        message: "a path must start with /",
      },
    ],
  ])("%s", (_name, given, expected) => {
    expect(requestOfDescriptor(mapping, given, 3, "descriptors[1]")).toEqual(expected);
  });

  it("a domain no mapping names is uncovered", () => {
    expect(
      requestOfDescriptor(null, entries(["customer_id", "acme"]), 1, "descriptors[0]"),
    ).toEqual({ kind: "uncovered", keys: "customer_id" });
  });
});

describe("limitOverrideOf applies a descriptor's limit only where the mapping allows it", () => {
  const allowing = ZDescriptorMapping.parse({ domain: "edge", limitOverride: "apply" });
  const ignoring = ZDescriptorMapping.parse({ domain: "edge" });
  it.each([
    ["the default mapping", ignoring, "MINUTE", { kind: "ignored", reason: "not-allowed" }],
    ["no mapping", null, "MINUTE", { kind: "ignored", reason: "not-allowed" }],
    ["an unknown unit", allowing, "UNKNOWN", { kind: "ignored", reason: "unit" }],
    ["a prototype name as unit", allowing, "toString", { kind: "ignored", reason: "unit" }],
    ["a number that is no unit", allowing, 8, { kind: "ignored", reason: "unit" }],
    ["UNKNOWN's number", allowing, 0, { kind: "ignored", reason: "unit" }],
    ["a week (7 days)", allowing, "WEEK", { kind: "apply", limit: 7, windowMs: 604_800_000 }],
    // The protos grpc-js loads predate WEEK, so an Envoy's WEEK arrives as its number.
    ["a week as its number 7", allowing, 7, { kind: "apply", limit: 7, windowMs: 604_800_000 }],
    ["a minute", allowing, "MINUTE", { kind: "apply", limit: 7, windowMs: 60_000 }],
    ["a month (30 days)", allowing, "MONTH", { kind: "apply", limit: 7, windowMs: 2_592_000_000 }],
    ["a year (365 days)", allowing, "YEAR", { kind: "apply", limit: 7, windowMs: 31_536_000_000 }],
  ])("%s", (_name, mapping, unit, expected) => {
    expect(limitOverrideOf(mapping, { requests_per_unit: 7, unit })).toEqual(expected);
  });
});
