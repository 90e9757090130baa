import { describe, expect, it } from "vitest";
import {
  describeGlobalChange,
  describeLimitBehaviour,
  describePolicyLimit,
  describeScope,
} from "./policy-words";

describe("policy words", () => {
  it.each([
    ["tier:pro", "pro customers, all endpoints"],
    ["tier:pro/endpoint:reports", "pro customers on reports"],
    ["ceiling", "every customer (per-customer ceiling)"],
    ["ceiling/endpoint:reports", "every customer on reports (endpoint ceiling)"],
    ["address", "every anonymous address (per-address ceiling)"],
    ["address/endpoint:sign-in", "anonymous requests to sign-in, per address"],
    ["candidate:x", "candidate:x"],
  ])("%s reads %s", (scope, words) => {
    expect(describeScope(scope)).toBe(words);
  });

  it("a limit reads as what it allows, then its algorithm; none reads none", () => {
    const limit = {
      algorithm: "token-bucket",
      capacity: 20,
      refillPerSec: 0.5,
      mode: "dry-run",
      onStoreFailure: "local",
    } as const;
    expect(describePolicyLimit(limit)).toBe("30/min, bursts of 20 (token bucket)");
    expect(describePolicyLimit(null)).toBe("none");
    expect(describeLimitBehaviour(limit)).toBe(
      "dry-run: counted, never rejects; if Redis is down: a local quota per gateway",
    );
  });

  it("marking a limit global or unmarking it reads as the change of its reach", () => {
    const perRegion = {
      algorithm: "token-bucket",
      capacity: 300,
      refillPerSec: 100,
      mode: "enforce",
      onStoreFailure: "open",
    } as const;
    const global = { ...perRegion, global: true } as const;
    expect(describeGlobalChange(perRegion, global)).toBe("per region → global");
    expect(describeGlobalChange(global, perRegion)).toBe("global → per region");
    expect(describeGlobalChange(global, { ...global, capacity: 600 })).toBeNull();
    expect(describeGlobalChange(perRegion, { ...perRegion, capacity: 600 })).toBeNull();
    expect(describeGlobalChange(null, global)).toBeNull();
    expect(describeGlobalChange(global, null)).toBeNull();
  });
});
