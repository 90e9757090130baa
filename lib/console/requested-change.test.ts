import { describe, expect, it } from "vitest";
import { requestedChangeOf } from "./requested-change";

describe("requestedChangeOf", () => {
  it.each([
    [
      "a tier edit",
      "/api/v1/tiers/free",
      "PATCH",
      { limit: 1 },
      { kind: "tier.update", name: "free", limit: 1, expectedVersion: 3 },
    ],
    [
      "a tier deletion",
      "/api/v1/tiers/a%2Db",
      "DELETE",
      {},
      { kind: "tier.delete", name: "a-b", expectedVersion: 3 },
    ],
    [
      "an endpoint-class edit",
      "/api/v1/endpoint-classes/reports",
      "PATCH",
      { cost: 2 },
      { kind: "endpoint-class.update", name: "reports", cost: 2, expectedVersion: 3 },
    ],
    [
      "the settings",
      "/api/v1/settings",
      "PATCH",
      { ceilings: {} },
      { kind: "settings.update", ceilings: {}, expectedVersion: 3 },
    ],
    ["a creation, which is never gated", "/api/v1/tiers", "POST", {}, null],
    ["another route", "/api/v1/customers/acme", "PATCH", {}, null],
  ])("%s", (_label, url, method, body, expected) => {
    expect(requestedChangeOf(url, method, body, 3)).toEqual(expected);
  });
});
