import { describe, expect, it } from "vitest";
import { limitPageOf } from "./limit-page";

describe("limitPageOf", () => {
  it.each([
    ["address", "/policies/settings", "the per-address ceiling", true],
    [
      "address/endpoint:login",
      "/policies/endpoint-classes/login",
      "endpoint class login's anonymous limit",
      true,
    ],
    ["ceiling", "/policies/settings", "the per-customer ceiling", true],
    [
      "ceiling/endpoint:search",
      "/policies/endpoint-classes/search",
      "endpoint class search's ceiling",
      true,
    ],
    ["tier:free", "/policies/tiers/free", "tier free", true],
    [
      "tier:free/endpoint:search",
      "/policies/endpoint-classes/search",
      "tier free on endpoint class search",
      true,
    ],
    ["customer:acme", "/customers/acme", "customer acme's override", false],
    ["incident:inc-1", "/incidents/inc-1", "incident inc-1", false],
  ])("%s links to %s (%s)", (scope, href, words, isDryRunTarget) => {
    expect(limitPageOf(scope)).toEqual({ href, words, isDryRunTarget });
  });

  it("a text that is not a scope has no page", () => {
    expect(limitPageOf("tier:")).toBeNull();
    expect(limitPageOf("<script>")).toBeNull();
  });
});
