import { describe, expect, it } from "vitest";
import { auditWebhookBody } from "./audit-webhook-form";

const STORED = "https://siem.example/hook";
const on = (url: string, isRotating = false) => ({ isEnabled: true, url, isRotating });

describe("what the audit webhook form sends", () => {
  const cases: [string, ReturnType<typeof on>, string | null, unknown][] = [
    [
      "a first URL",
      on(" https://siem.example/hook "),
      null,
      { kind: "send", body: { url: STORED } },
    ],
    ["the same URL: nothing", on(STORED), STORED, { kind: "unchanged" }],
    [
      "the same URL with a new secret",
      on(STORED, true),
      STORED,
      { kind: "send", body: { url: STORED, rotateSigningSecret: true } },
    ],
    [
      "turned off",
      { isEnabled: false, url: STORED, isRotating: false },
      STORED,
      { kind: "send", body: { url: null } },
    ],
    [
      "off and already off: nothing",
      { isEnabled: false, url: "", isRotating: false },
      null,
      { kind: "unchanged" },
    ],
  ];
  it.each(cases)("%s", (_what, draft, stored, expected) => {
    expect(auditWebhookBody(draft, stored)).toEqual(expected);
  });

  const refused: [string, string, RegExp][] = [
    ["an empty URL while on", "  ", /^Give the receiver's URL/],
    ["not a URL", "siem.example/hook", /^url must be an https:\/\/ or http:\/\/ URL/],
    ["another scheme", "ftp://siem.example/hook", /^url must be an https:\/\/ or http:\/\/ URL/],
    ["a script", "javascript:alert(1)", /^url must be an https:\/\/ or http:\/\/ URL/],
  ];
  it.each(refused)("refuses %s at the url field", (_what, url, message) => {
    const result = auditWebhookBody(on(url), null);
    expect(result.kind).toBe("invalid");
    expect(result.kind === "invalid" ? result.errors.url : "").toMatch(message);
  });
});
