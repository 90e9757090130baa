import example from "@limitplane/enforcer/example-policy.json";
import {
  compileSnapshot,
  parsePolicyDocument,
  prepareSnapshot,
  type ResolutionTrace,
  resolveLimits,
} from "@limitplane/enforcer/policy";
import { describe, expect, it } from "vitest";
import { incidentScopeOptions, scopeOfRejection, type Traced } from "./incident-scopes";

const NOW_MS = Date.parse("2025-06-02T12:00:00Z");
const CLASSES = [
  { name: "default", displayName: "Everything else" },
  { name: "reports", displayName: "Reports (expensive)" },
  { name: "search", displayName: null },
];

/** Traces for one customer and tier, per endpoint class, under the example policy at NOW_MS. */
function tracesFor(customerId: string, tier: string): Map<string, Traced> {
  const parsed = parsePolicyDocument(example);
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
  const snapshot = prepareSnapshot(
    compileSnapshot(parsed.value, { version: 1, compiledAt: "2025-06-02T08:00:00Z" }),
  );
  const traces = new Map<string, Traced>();
  for (const endpointClass of CLASSES) {
    const trace: ResolutionTrace | null = resolveLimits(
      snapshot,
      { customerId, tier, endpointClass: endpointClass.name },
      NOW_MS,
    ).trace;
    if (trace === null) throw new Error("no trace");
    traces.set(endpointClass.name, { trace });
  }
  return traces;
}

const bucket = (capacity: number, refillPerSec: number) => ({
  algorithm: "token-bucket",
  capacity,
  refillPerSec,
});

describe("incidentScopeOptions", () => {
  it("offers the account layer and each endpoint class, with what applies now and what a raise replaces", () => {
    const options = incidentScopeOptions(CLASSES, tracesFor("initech", "free"), []);
    expect(
      options.map(({ value, endpointClass, current, base, activeIncidentId }) => ({
        value,
        endpointClass,
        current,
        base,
        activeIncidentId,
      })),
    ).toEqual([
      {
        value: "account",
        endpointClass: null,
        current: bucket(20, 10),
        base: bucket(20, 10),
        activeIncidentId: null,
      },
      {
        value: "default",
        endpointClass: "default",
        current: null,
        base: null,
        activeIncidentId: null,
      },
      {
        value: "reports",
        endpointClass: "reports",
        current: bucket(20, 0.5),
        base: bucket(20, 0.5),
        activeIncidentId: null,
      },
      {
        value: "search",
        endpointClass: "search",
        current: bucket(20, 2),
        base: bucket(20, 2),
        activeIncidentId: null,
      },
    ]);
    expect(options.map((option) => option.label)).toEqual([
      "All endpoints (account)",
      "default (Everything else)",
      "reports (Reports (expensive))",
      "search",
    ]);
  });

  it("during an incident: the incident's limit applies now, the tier's is what a new one would replace", () => {
    // The example's acme incident (×3 on all endpoints) is active at NOW_MS.
    const options = incidentScopeOptions(CLASSES, tracesFor("acme", "enterprise"), [
      { id: "inc-2025-06-02-acme", endpointClass: null },
    ]);
    expect(options[0]).toMatchObject({
      value: "account",
      current: bucket(15_000, 3_000),
      base: bucket(5_000, 1_000),
      activeIncidentId: "inc-2025-06-02-acme",
    });
    expect(options[2]).toMatchObject({ value: "reports", activeIncidentId: null });
  });

  it("a customer override is what an incident replaces on its layer", () => {
    const options = incidentScopeOptions(CLASSES, tracesFor("globex", "pro"), []);
    expect(options.find((option) => option.value === "reports")).toMatchObject({
      current: bucket(300, 15),
      base: bucket(300, 15),
    });
  });
});

describe("scopeOfRejection", () => {
  const traces = tracesFor("initech", "free");
  it.each([
    ["the tier's account limit", { scope: "tier:free", endpointClass: "default" }, "account"],
    [
      "an endpoint limit",
      { scope: "tier:free/endpoint:search", endpointClass: "search" },
      "search",
    ],
    ["a ceiling, which no incident raises", { scope: "ceiling", endpointClass: "default" }, null],
    ["an unknown endpoint class", { scope: "tier:free", endpointClass: null }, null],
    ["a scope no longer in the policy", { scope: "tier:gone", endpointClass: "default" }, null],
  ])("%s", (_name, rejection, expected) => {
    expect(scopeOfRejection(rejection, traces)).toBe(expected);
  });

  it("no rejection: nothing preselected", () => {
    expect(scopeOfRejection(undefined, traces)).toBeNull();
  });
});
