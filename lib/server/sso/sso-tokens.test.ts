import { describe, expect, it } from "vitest";
import { openSsoTokens, sealSsoTokens } from "./sso-tokens";

const SECRET = "sso-tokens-test-secret-0123456789abcdef";
const TOKENS = { refreshToken: "rt-1", accessToken: "at-1", idToken: "a.b.c" };

describe("sealed SSO tokens", () => {
  it("open as sealed, and two seals of the same tokens differ (a fresh IV each)", () => {
    const sealed = sealSsoTokens(TOKENS, SECRET);
    expect(openSsoTokens(sealed, SECRET)).toEqual(TOKENS);
    expect(sealSsoTokens(TOKENS, SECRET)).not.toBe(sealed);
    expect(sealed).not.toContain("rt-1");
  });

  it.each([
    ["nothing", null, SECRET],
    ["another secret", "other", "another-secret-0123456789abcdef0123"],
    ["a flipped byte", "flip", SECRET],
    ["a missing part", "drop", SECRET],
    ["an extra part", "extra", SECRET],
    ["another version", "v2", SECRET],
    ["not base64", "v1.!.!.!", SECRET],
  ])("open as nothing: %s", (_label, change, secret) => {
    const sealed = sealSsoTokens(TOKENS, SECRET);
    const parts = sealed.split(".");
    const body = parts[3] ?? "";
    const altered =
      change === null
        ? null
        : change === "other"
          ? sealed
          : change === "flip"
            ? [...parts.slice(0, 3), `${body[0] === "A" ? "B" : "A"}${body.slice(1)}`].join(".")
            : change === "drop"
              ? parts.slice(0, 3).join(".")
              : change === "extra"
                ? `${sealed}.x`
                : change === "v2"
                  ? sealed.replace(/^v1/, "v2")
                  : change;
    expect(openSsoTokens(altered, secret)).toBeNull();
  });

  it("a sealed value that is not the tokens' shape opens as nothing", () => {
    const sealed = sealSsoTokens(
      { refreshToken: null, accessToken: "x", idToken: "" } as unknown as typeof TOKENS,
      SECRET,
    );
    expect(openSsoTokens(sealed, SECRET)).toBeNull();
  });
});
