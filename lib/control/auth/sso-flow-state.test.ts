import { describe, expect, it } from "vitest";
import { openFlowState, sealFlowState } from "./sso-flow-state";

const SECRET = "flow-secret-0123456789abcdef0123456789";
const state = {
  verifier: "v".repeat(43),
  state: "st",
  nonce: "no",
  next: "/customers",
  expiresAtMs: 10_000,
};

describe("the SSO flow cookie", () => {
  it("opens what it sealed, until it expires", () => {
    const sealed = sealFlowState(state, SECRET);
    expect(openFlowState(sealed, SECRET, 9_999)).toEqual(state);
    expect(openFlowState(sealed, SECRET, 10_000)).toBeNull();
  });

  it("refuses another secret, an altered payload, and hostile values", () => {
    const sealed = sealFlowState(state, SECRET);
    const [payload, mac] = sealed.split(".");
    const changed = Buffer.from(
      JSON.stringify({ ...state, next: "https://evil.example" }),
    ).toString("base64url");
    for (const hostile of [
      sealFlowState(state, "another-secret-0123456789abcdef0123"),
      `${changed}.${mac}`,
      `${payload}.${mac}.extra`,
      `${payload}`,
      "",
      "x".repeat(5_000),
      null,
    ]) {
      expect(openFlowState(hostile, SECRET, 0)).toBeNull();
    }
  });
});
