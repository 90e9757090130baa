import { describe, expect, it } from "vitest";
import { policyValidationError, type StoredPolicy } from "./stored-policy";

const stored: StoredPolicy = {
  input: {},
  keys: {
    tiers: ["free", "pro"],
    endpointClasses: ["default", "search"],
    customers: ["org:acme"],
    customerOverrides: ["customer:org:acme"],
    incidentOverrides: ["inc-1"],
    dryRunCandidates: [],
    descriptorRules: [],
    outboundBudgets: [],
  },
};

describe("policyValidationError", () => {
  it("points problems in the entity being changed at the caller's own fields", () => {
    const error = policyValidationError(
      stored,
      [{ path: ["tiers", 1, "limit", "capacity"], message: "capacity 5 is too small" }],
      { collection: "tiers", id: "pro" },
    );
    expect(error.fieldErrors).toEqual([
      { path: "limit.capacity", message: "capacity 5 is too small" },
    ]);
  });

  it("names other entities by key, in the path and the message", () => {
    const error = policyValidationError(
      stored,
      [
        { path: ["tiers", 0, "limit", "capacity"], message: "capacity 20 is too small" },
        { path: ["customerOverrides", 0, "limit"], message: "off" },
        { path: ["guardrails", "maxIncidentFactor"], message: "too low" },
      ],
      { collection: "endpointClasses", id: "search" },
    );
    expect(error.fieldErrors).toEqual([
      { path: "tiers.free.limit.capacity", message: 'tier "free": capacity 20 is too small' },
      {
        path: 'customerOverrides["customer:org:acme"].limit',
        message: 'customer override "customer:org:acme": off',
      },
      { path: "guardrails.maxIncidentFactor", message: "the settings: too low" },
    ]);
  });

  it("replaces positions inside messages with keys", () => {
    const error = policyValidationError(
      stored,
      [
        {
          path: ["endpointClasses", 1, "match", 0],
          message:
            'GET /x is already matched by endpoint class "default" (endpointClasses[0].match[2])',
        },
      ],
      { collection: "endpointClasses", id: "search" },
    );
    expect(error.fieldErrors).toEqual([
      {
        path: "match[0]",
        message:
          'GET /x is already matched by endpoint class "default" (endpointClasses.default.match[2])',
      },
    ]);
    expect(error.code).toBe("VALIDATION_FAILED");
  });
});
