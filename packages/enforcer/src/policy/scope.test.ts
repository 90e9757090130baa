import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  type Bucket,
  formatBucket,
  formatScope,
  formatSubject,
  parseBucket,
  parseScope,
  parseSubject,
  type Scope,
  type Subject,
} from "./scope";

const name = fc.stringMatching(/^[a-z0-9][a-z0-9_-]{0,62}$/);
const customerId = fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}$/);
const recordId = fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/);
const endpointClass = fc.option(name, { nil: null });

const scope: fc.Arbitrary<Scope> = fc.oneof(
  fc.record({ kind: fc.constant("ceiling" as const), endpointClass }),
  fc.record({ kind: fc.constant("address" as const), endpointClass }),
  fc.record({ kind: fc.constant("tier" as const), tier: name, endpointClass }),
  fc.record({ kind: fc.constant("customer" as const), customerId, endpointClass }),
  fc.record({ kind: fc.constant("incident" as const), incidentId: recordId }),
  fc.record({ kind: fc.constant("candidate" as const), candidateId: recordId }),
);

const bucket: fc.Arbitrary<Bucket> = fc.oneof(
  fc.constant({ kind: "account" as const }),
  fc.record({ kind: fc.constant("endpoint" as const), endpointClass: name }),
  fc.record({ kind: fc.constant("ceiling" as const), endpointClass }),
  fc.record({ kind: fc.constant("candidate" as const), candidateId: recordId }),
  fc.record({ kind: fc.constant("dry-run" as const), scope }),
);

const ipv4 = fc
  .tuple(fc.nat(255), fc.nat(255), fc.nat(255), fc.nat(255))
  .map((octets) => octets.join("."));
const ipv6Network = fc
  .array(fc.nat(0xffff), { minLength: 4, maxLength: 4 })
  .map((groups) => `${groups.map((group) => group.toString(16)).join(":")}::/64`);
const subject: fc.Arbitrary<Subject> = fc.oneof(
  fc.record({ kind: fc.constant("customer" as const), customerId }),
  fc.record({
    kind: fc.constant("address" as const),
    address: fc.oneof(ipv4, ipv6Network, fc.constant("unknown")),
    endpointClass,
  }),
);

/** Text built from the grammar's own pieces, so that near-misses are common. */
const scopeLikeText = fc
  .array(
    fc.constantFrom(
      "ceiling",
      "address",
      "tier:",
      "customer:",
      "incident:",
      "candidate:",
      "endpoint:",
      "/",
      ":",
      "pro",
      "Pro",
      "a.b",
      "-x",
      "",
      " ",
    ),
    { maxLength: 6 },
  )
  .map((parts) => parts.join(""));

describe("scope grammar", () => {
  it("round-trips every scope: parse(format(scope)) equals scope", () => {
    fc.assert(
      fc.property(scope, (value) => {
        expect(parseScope(formatScope(value))).toEqual(value);
      }),
    );
  });

  it("has one spelling per scope: format(parse(text)) === text whenever text parses", () => {
    fc.assert(
      fc.property(scopeLikeText, (text) => {
        const parsed = parseScope(text);
        if (parsed !== null) expect(formatScope(parsed)).toBe(text);
      }),
    );
  });

  it("round-trips every bucket", () => {
    fc.assert(
      fc.property(bucket, (value) => {
        expect(parseBucket(formatBucket(value))).toEqual(value);
      }),
    );
  });

  it("round-trips every subject, and customer and address subjects never collide", () => {
    fc.assert(
      fc.property(subject, (value) => {
        const text = formatSubject(value);
        expect(parseSubject(text)).toEqual(value);
        expect(text.startsWith(value.kind === "customer" ? "c:" : "a:")).toBe(true);
      }),
    );
  });

  it.each([
    ["ceiling", { kind: "ceiling", endpointClass: null }],
    ["ceiling/endpoint:reports", { kind: "ceiling", endpointClass: "reports" }],
    ["address/endpoint:sign-in", { kind: "address", endpointClass: "sign-in" }],
    ["tier:pro/endpoint:reports", { kind: "tier", tier: "pro", endpointClass: "reports" }],
    ["customer:org:acme", { kind: "customer", customerId: "org:acme", endpointClass: null }],
    [
      "customer:org:acme/endpoint:reports",
      { kind: "customer", customerId: "org:acme", endpointClass: "reports" },
    ],
    ["incident:inc-42", { kind: "incident", incidentId: "inc-42" }],
    ["candidate:free-halved", { kind: "candidate", candidateId: "free-halved" }],
  ] satisfies [string, Scope][])("parses %s", (text, expected) => {
    expect(parseScope(text)).toEqual(expected);
  });

  it.each([
    "",
    "tier:",
    "tier:Pro",
    "tier:pro/",
    "tier:pro/endpoint:",
    "tier:pro/endpoint:reports/endpoint:x",
    "tier:pro/tier:free",
    "customer:a/b",
    "customer:.hidden",
    "incident:inc-1/endpoint:reports",
    "candidate:c/endpoint:reports",
    "ceiling:x",
    "global",
    " tier:pro",
  ])("refuses %j", (text) => {
    expect(parseScope(text)).toBeNull();
  });

  it("refuses to format an identifier that could not be parsed back", () => {
    expect(() => formatScope({ kind: "tier", tier: "Pro", endpointClass: null })).toThrow(
      TypeError,
    );
    expect(() => formatScope({ kind: "customer", customerId: "a/b", endpointClass: null })).toThrow(
      TypeError,
    );
    expect(() =>
      formatSubject({ kind: "address", address: "1.2.3.4/endpoint:x", endpointClass: null }),
    ).toThrow(TypeError);
  });

  it("names the layer, not the rule, in buckets", () => {
    expect(formatBucket({ kind: "account" })).toBe("account");
    expect(formatBucket({ kind: "endpoint", endpointClass: "reports" })).toBe("endpoint:reports");
    expect(formatBucket({ kind: "ceiling", endpointClass: "reports" })).toBe(
      "ceiling/endpoint:reports",
    );
    expect(
      formatBucket({
        kind: "dry-run",
        scope: { kind: "customer", customerId: "acme", endpointClass: null },
      }),
    ).toBe("dry-run/customer:acme");
    expect(parseBucket("tier:pro")).toBeNull();
    expect(parseBucket("dry-run/nonsense")).toBeNull();
  });
});
