import { describe, expect, it } from "vitest";
import { encodeRlsResponse } from "./rls-encode";
import { rateLimitServiceDefinition } from "./rls-proto";
import type { RlsResponseMessage } from "./rls-response";

const method = rateLimitServiceDefinition().ShouldRateLimit;
if (method === undefined) throw new Error("no ShouldRateLimit");
const { responseSerialize, responseDeserialize } = method;

const over: RlsResponseMessage = {
  overall_code: "OVER_LIMIT",
  statuses: [
    {
      code: "OVER_LIMIT",
      current_limit: { name: "tier:free", requests_per_unit: 8, unit: "DAY" },
      limit_remaining: 0,
      duration_until_reset: { seconds: 3_599, nanos: 123_000_000 },
    },
    { code: "OK", current_limit: null, limit_remaining: 0, duration_until_reset: null },
  ],
  response_headers_to_add: Object.freeze([
    { key: "content-type", value: "application/problem+json" },
    { key: "retry-after", value: "3600" },
    { key: "ratelimit", value: '"tier:free";r=0;t=3600' },
  ]),
  raw_body: Buffer.from('{"type":"about:blank","retryAfterMs":3599123}'),
};

describe("encodeRlsResponse writes what the generic encoder writes", () => {
  it.each([
    ["an OVER_LIMIT with headers and a problem body", over],
    [
      "an OK with nothing covered",
      {
        overall_code: "OK",
        statuses: [
          { code: "OK", current_limit: null, limit_remaining: 0, duration_until_reset: null },
        ],
        response_headers_to_add: [],
        raw_body: Buffer.alloc(0),
      },
    ],
    [
      "an unlimited rule, a deny rule, a year, and the largest numbers",
      {
        overall_code: "OVER_LIMIT",
        statuses: [
          {
            code: "OK",
            current_limit: null,
            limit_remaining: 4_294_967_295,
            duration_until_reset: null,
          },
          {
            code: "OVER_LIMIT",
            current_limit: { name: "descriptor:deny", requests_per_unit: 0, unit: "SECOND" },
            limit_remaining: 0,
            duration_until_reset: { seconds: 0, nanos: 0 },
          },
          {
            code: "OK",
            current_limit: { name: "", requests_per_unit: 4_294_967_295, unit: "YEAR" },
            limit_remaining: 300,
            duration_until_reset: { seconds: 2 ** 40, nanos: 999_999_999 },
          },
        ],
        response_headers_to_add: [{ key: "x-note", value: "naïve ✓ ünïcode" }],
        raw_body: Buffer.alloc(300, 0x7b),
      },
    ],
  ] satisfies [string, RlsResponseMessage][])("%s", (_name, message) => {
    const ours = encodeRlsResponse(message);
    expect(responseDeserialize(ours)).toEqual(responseDeserialize(responseSerialize(message)));
  });

  it("a week is written as Envoy's WEEK, number 7, which the bundled protos predate", () => {
    const week: RlsResponseMessage = {
      ...over,
      statuses: [
        {
          code: "OK",
          current_limit: { name: "descriptor:weekly", requests_per_unit: 700, unit: "WEEK" },
          limit_remaining: 699,
          duration_until_reset: { seconds: 86_400, nanos: 0 },
        },
      ],
    };
    expect(responseDeserialize(encodeRlsResponse(week))).toMatchObject({
      statuses: [
        {
          code: "OK",
          current_limit: { name: "descriptor:weekly", requests_per_unit: 700, unit: 7 },
          limit_remaining: 699,
        },
      ],
    });
  });

  it("a frozen header list is encoded once and gives the same bytes again", () => {
    const first = encodeRlsResponse(over);
    const second = encodeRlsResponse({ ...over, raw_body: Buffer.from("{}") });
    expect(responseDeserialize(second)).toMatchObject({
      response_headers_to_add: over.response_headers_to_add.map((header) => ({
        ...header,
        raw_value: Buffer.alloc(0),
      })),
    });
    expect(first.subarray(0, 10)).toEqual(second.subarray(0, 10));
  });
});
