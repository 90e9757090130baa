import { describe, expect, it } from "vitest";
import { isSafeMethod, isSameOriginRequest } from "./cross-site";

function request(headers: Record<string, string>) {
  return new Request("http://console.local:3000/api/v1/tiers", { method: "POST", headers });
}

describe("isSameOriginRequest", () => {
  it.each([
    [
      "the console's own origin",
      { host: "console.local:3000", origin: "http://console.local:3000" },
      true,
    ],
    ["another site", { host: "console.local:3000", origin: "https://evil.example" }, false],
    ["another port", { host: "console.local:3000", origin: "http://console.local:4000" }, false],
    ["an opaque origin", { host: "console.local:3000", origin: "null" }, false],
    [
      "no Origin but Sec-Fetch-Site same-origin",
      { host: "console.local:3000", "sec-fetch-site": "same-origin" },
      true,
    ],
    [
      "no Origin and Sec-Fetch-Site cross-site",
      { host: "console.local:3000", "sec-fetch-site": "cross-site" },
      false,
    ],
    ["neither header", { host: "console.local:3000" }, false],
    [
      "behind a proxy that forwards host and scheme",
      {
        host: "10.0.0.5:3000",
        "x-forwarded-host": "console.example.com",
        "x-forwarded-proto": "https",
        origin: "https://console.example.com",
      },
      true,
    ],
    [
      "behind a chain of proxies: the nearest proxy's (last) scheme and host count",
      {
        host: "10.0.0.5:3000",
        "x-forwarded-host": "evil.example, console.example.com",
        "x-forwarded-proto": "http, https",
        origin: "https://console.example.com",
      },
      true,
    ],
  ])("%s: %s", (_label, headers, expected) => {
    expect(isSameOriginRequest(request(headers))).toBe(expected);
  });
});

describe("isSafeMethod", () => {
  it("only reads are safe", () => {
    expect(["GET", "HEAD", "OPTIONS"].every(isSafeMethod)).toBe(true);
    expect(["POST", "PUT", "PATCH", "DELETE"].some(isSafeMethod)).toBe(false);
  });
});
