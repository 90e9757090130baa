import { describe, expect, it } from "vitest";
import { credentialOf } from "./authenticate";

import {
  clearedSessionCookieHeader,
  isSecureCookieRequest,
  sessionCookieHeader,
  sessionTokenFromCookieHeader,
} from "./session-cookie";

function request(url: string, headers: Record<string, string> = {}) {
  return new Request(url, { headers });
}

describe("the session cookie", () => {
  it("is httpOnly, SameSite=Lax, Path=/ and lives as long as the session", () => {
    expect(sessionCookieHeader("abc", { secure: true, maxAgeSec: 43_200 })).toBe(
      "lp_session=abc; Path=/; Max-Age=43200; HttpOnly; SameSite=Lax; Secure",
    );
    expect(sessionCookieHeader("abc", { secure: false, maxAgeSec: 60 })).not.toContain("Secure");
  });

  it("is cleared with an empty value that expires at once", () => {
    expect(clearedSessionCookieHeader(true)).toBe(
      "lp_session=; Path=/; Max-Age=0; HttpOnly; SameSite=Lax; Secure",
    );
  });

  it.each([
    ["plain http to localhost", { isHttps: false, host: "localhost:3000" }, false],
    ["plain http to 127.0.0.1", { isHttps: false, host: "127.0.0.1:3000" }, false],
    ["plain http to [::1]", { isHttps: false, host: "[::1]:3000" }, false],
    ["https to localhost", { isHttps: true, host: "localhost:3000" }, true],
    ["plain http to another host", { isHttps: false, host: "console.internal:3000" }, true],
    ["a request that named no host", { isHttps: false, host: null }, true],
  ] as const)("auto: Secure for %s is %s", (_label, origin, expected) => {
    expect(isSecureCookieRequest(origin, "auto")).toBe(expected);
  });

  it("COOKIE_SECURE true or false overrides the rule", () => {
    expect(isSecureCookieRequest({ isHttps: false, host: "localhost" }, "true")).toBe(true);
    expect(isSecureCookieRequest({ isHttps: true, host: "example.com" }, "false")).toBe(false);
  });

  it.each([
    ["lp_session=tok", "tok"],
    ["a=1; lp_session=tok; b=2", "tok"],
    ["xlp_session=tok", null],
    ["lp_session=", null],
    ["other=1", null],
  ] as const)("reads %j as %j", (header, expected) => {
    expect(sessionTokenFromCookieHeader(header)).toBe(expected);
  });
});

describe("credentialOf", () => {
  const cookie = { cookie: "lp_session=sess" };

  it.each([
    ["a session cookie", cookie, { kind: "session", token: "sess" }],
    ["a bearer token", { authorization: "Bearer lp_x" }, { kind: "token", token: "lp_x" }],
    [
      "a bearer token with a cookie: the header wins, the cookie is ignored",
      { ...cookie, authorization: "bearer lp_x" },
      { kind: "token", token: "lp_x" },
    ],
    [
      "a malformed Authorization header: no credential, even with a cookie",
      { ...cookie, authorization: "Basic abc" },
      null,
    ],
    ["nothing", {}, null],
  ] as const)("%s", (_label, headers, expected) => {
    expect(credentialOf(request("http://localhost/x", headers))).toEqual(expected);
  });
});
