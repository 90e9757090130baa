/**
 * Every mutating service, refused three ways (bad input, a stale version, an unknown entity),
 * writes nothing at all: no change, no audit entry, no version, no outbox row.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { createCandidate } from "@/lib/control/candidate/create-candidate";
import { discardCandidate } from "@/lib/control/candidate/discard-candidate";
import { promoteCandidate } from "@/lib/control/candidate/promote-candidate";
import { updateCandidate } from "@/lib/control/candidate/update-candidate";
import { createCustomer } from "@/lib/control/customer/create-customer";
import { deleteCustomer } from "@/lib/control/customer/delete-customer";
import { updateCustomer } from "@/lib/control/customer/update-customer";
import { createCustomerOverride } from "@/lib/control/customer-override/create-customer-override";
import { deleteCustomerOverride } from "@/lib/control/customer-override/delete-customer-override";
import { updateCustomerOverride } from "@/lib/control/customer-override/update-customer-override";
import type { ControlDeps } from "@/lib/control/deps";
import { createEndpointClass } from "@/lib/control/endpoint-class/create-endpoint-class";
import { deleteEndpointClass } from "@/lib/control/endpoint-class/delete-endpoint-class";
import { updateEndpointClass } from "@/lib/control/endpoint-class/update-endpoint-class";
import { extendIncident } from "@/lib/control/incident/extend-incident";
import { raiseIncident } from "@/lib/control/incident/raise-incident";
import { revertIncident } from "@/lib/control/incident/revert-incident";
import { importPolicy } from "@/lib/control/policy/import-policy";
import { updatePolicySettings } from "@/lib/control/settings/update-policy-settings";
import { createTier } from "@/lib/control/tier/create-tier";
import { deleteTier } from "@/lib/control/tier/delete-tier";
import { updateTier } from "@/lib/control/tier/update-tier";
import {
  depsFor,
  expectRefusedWithoutWrites,
  importExamplePolicy,
  operatorContext,
} from "./helpers/policy-fixtures";
import { provideTestDatabase } from "./helpers/test-database";

const database = provideTestDatabase();
let deps: ControlDeps;

beforeAll(async () => {
  deps = depsFor(database.current().db);
  await importExamplePolicy(deps);
});

const ctx = operatorContext();
const bucket = { algorithm: "token-bucket" as const, capacity: 100, refillPerSec: 10 };
const incident = "inc-2025-06-02-acme";
const noLimit = {} as unknown as typeof bucket;

type Case = readonly [
  string,
  "VALIDATION_FAILED" | "VERSION_CONFLICT" | "NOT_FOUND",
  () => Promise<unknown>,
];

// Every example entity is at version 1; expectedVersion 2 is stale (ahead of it).
const cases: readonly Case[] = [
  [
    "createTier",
    "VALIDATION_FAILED",
    () => createTier({ name: "Bad Name", limit: bucket }, ctx, deps),
  ],
  [
    "updateTier",
    "VALIDATION_FAILED",
    () => updateTier({ name: "pro", expectedVersion: 1, limit: noLimit }, ctx, deps),
  ],
  [
    "updateTier",
    "VERSION_CONFLICT",
    () => updateTier({ name: "pro", expectedVersion: 2, limit: bucket }, ctx, deps),
  ],
  [
    "updateTier",
    "NOT_FOUND",
    () => updateTier({ name: "gone", expectedVersion: 1, limit: bucket }, ctx, deps),
  ],
  [
    "deleteTier",
    "VALIDATION_FAILED",
    () => deleteTier({ name: "pro", expectedVersion: 0 }, ctx, deps),
  ],
  [
    "deleteTier",
    "VERSION_CONFLICT",
    () => deleteTier({ name: "pro", expectedVersion: 2 }, ctx, deps),
  ],
  ["deleteTier", "NOT_FOUND", () => deleteTier({ name: "gone", expectedVersion: 1 }, ctx, deps)],
  [
    "createEndpointClass",
    "VALIDATION_FAILED",
    () => createEndpointClass({ name: "x", cost: -1 }, ctx, deps),
  ],
  [
    "updateEndpointClass",
    "VALIDATION_FAILED",
    () =>
      updateEndpointClass(
        { name: "search", expectedVersion: 1, keyBy: "route" as "address" },
        ctx,
        deps,
      ),
  ],
  [
    "updateEndpointClass",
    "VERSION_CONFLICT",
    () => updateEndpointClass({ name: "search", expectedVersion: 2, cost: 3 }, ctx, deps),
  ],
  [
    "updateEndpointClass",
    "NOT_FOUND",
    () => updateEndpointClass({ name: "gone", expectedVersion: 1, cost: 3 }, ctx, deps),
  ],
  [
    "deleteEndpointClass",
    "VERSION_CONFLICT",
    () => deleteEndpointClass({ name: "search", expectedVersion: 2 }, ctx, deps),
  ],
  [
    "deleteEndpointClass",
    "NOT_FOUND",
    () => deleteEndpointClass({ name: "gone", expectedVersion: 1 }, ctx, deps),
  ],
  [
    "updatePolicySettings",
    "VALIDATION_FAILED",
    () =>
      updatePolicySettings({ expectedVersion: 1, guardrails: { maxIncidentFactor: 1 } }, ctx, deps),
  ],
  [
    "updatePolicySettings",
    "VERSION_CONFLICT",
    () => updatePolicySettings({ expectedVersion: 2, defaultTier: "pro" }, ctx, deps),
  ],
  [
    "createCustomer",
    "VALIDATION_FAILED",
    () => createCustomer({ id: "new", displayName: "", tier: "pro" }, ctx, deps),
  ],
  [
    "updateCustomer",
    "VALIDATION_FAILED",
    () => updateCustomer({ id: "acme", expectedVersion: 1, tier: "platinum" }, ctx, deps),
  ],
  [
    "updateCustomer",
    "VERSION_CONFLICT",
    () => updateCustomer({ id: "acme", expectedVersion: 2, displayName: "A" }, ctx, deps),
  ],
  [
    "updateCustomer",
    "NOT_FOUND",
    () => updateCustomer({ id: "gone", expectedVersion: 1, displayName: "A" }, ctx, deps),
  ],
  [
    "deleteCustomer",
    "VERSION_CONFLICT",
    () => deleteCustomer({ id: "initech", expectedVersion: 2 }, ctx, deps),
  ],
  [
    "deleteCustomer",
    "NOT_FOUND",
    () => deleteCustomer({ id: "gone", expectedVersion: 1 }, ctx, deps),
  ],
  [
    "createCustomerOverride",
    "VALIDATION_FAILED",
    () =>
      createCustomerOverride(
        { customerId: "acme", endpointClass: null, limit: noLimit },
        ctx,
        deps,
      ),
  ],
  [
    "createCustomerOverride",
    "NOT_FOUND",
    () =>
      createCustomerOverride({ customerId: "gone", endpointClass: null, limit: bucket }, ctx, deps),
  ],
  [
    "updateCustomerOverride",
    "VALIDATION_FAILED",
    () =>
      updateCustomerOverride(
        { customerId: "globex", endpointClass: "reports", expectedVersion: 1, limit: noLimit },
        ctx,
        deps,
      ),
  ],
  [
    "updateCustomerOverride",
    "VERSION_CONFLICT",
    () =>
      updateCustomerOverride(
        { customerId: "globex", endpointClass: "reports", expectedVersion: 2, limit: bucket },
        ctx,
        deps,
      ),
  ],
  [
    "updateCustomerOverride",
    "NOT_FOUND",
    () =>
      updateCustomerOverride(
        { customerId: "acme", endpointClass: "reports", expectedVersion: 1, limit: bucket },
        ctx,
        deps,
      ),
  ],
  [
    "deleteCustomerOverride",
    "VERSION_CONFLICT",
    () =>
      deleteCustomerOverride(
        { customerId: "globex", endpointClass: "reports", expectedVersion: 2 },
        ctx,
        deps,
      ),
  ],
  [
    "deleteCustomerOverride",
    "NOT_FOUND",
    () =>
      deleteCustomerOverride(
        { customerId: "acme", endpointClass: null, expectedVersion: 1 },
        ctx,
        deps,
      ),
  ],
  [
    "raiseIncident",
    "VALIDATION_FAILED",
    () => raiseIncident({ customerId: "globex", factor: 0, durationMs: 60_000 }, ctx, deps),
  ],
  [
    "raiseIncident",
    "NOT_FOUND",
    () => raiseIncident({ customerId: "gone", factor: 2, durationMs: 60_000 }, ctx, deps),
  ],
  [
    "extendIncident",
    "VALIDATION_FAILED",
    () => extendIncident({ id: incident, expectedVersion: 1, durationMs: 0 }, ctx, deps),
  ],
  [
    "extendIncident",
    "VERSION_CONFLICT",
    () =>
      extendIncident({ id: incident, expectedVersion: 2, durationMs: 13 * 3_600_000 }, ctx, deps),
  ],
  [
    "extendIncident",
    "NOT_FOUND",
    () => extendIncident({ id: "gone", expectedVersion: 1, durationMs: 60_000 }, ctx, deps),
  ],
  [
    "revertIncident",
    "VALIDATION_FAILED",
    () => revertIncident({ id: "not an id", expectedVersion: 1 }, ctx, deps),
  ],
  [
    "revertIncident",
    "VERSION_CONFLICT",
    () => revertIncident({ id: incident, expectedVersion: 2 }, ctx, deps),
  ],
  [
    "revertIncident",
    "NOT_FOUND",
    () => revertIncident({ id: "gone", expectedVersion: 1 }, ctx, deps),
  ],
  [
    "createCandidate",
    "VALIDATION_FAILED",
    () => createCandidate({ target: "incident:x", limit: bucket }, ctx, deps),
  ],
  [
    "updateCandidate",
    "VALIDATION_FAILED",
    () => updateCandidate({ id: "free-halved", expectedVersion: 1 }, ctx, deps),
  ],
  [
    "updateCandidate",
    "VERSION_CONFLICT",
    () => updateCandidate({ id: "free-halved", expectedVersion: 2, limit: bucket }, ctx, deps),
  ],
  [
    "updateCandidate",
    "NOT_FOUND",
    () => updateCandidate({ id: "gone", expectedVersion: 1, limit: bucket }, ctx, deps),
  ],
  [
    "promoteCandidate",
    "VERSION_CONFLICT",
    () => promoteCandidate({ id: "free-halved", expectedVersion: 2 }, ctx, deps),
  ],
  [
    "promoteCandidate",
    "NOT_FOUND",
    () => promoteCandidate({ id: "gone", expectedVersion: 1 }, ctx, deps),
  ],
  [
    "discardCandidate",
    "VERSION_CONFLICT",
    () => discardCandidate({ id: "free-halved", expectedVersion: 2 }, ctx, deps),
  ],
  [
    "discardCandidate",
    "NOT_FOUND",
    () => discardCandidate({ id: "gone", expectedVersion: 1 }, ctx, deps),
  ],
  ["importPolicy", "VALIDATION_FAILED", () => importPolicy({ tiers: [] }, ctx, deps)],
];

describe("a refused change writes nothing", () => {
  it.each(cases)("%s refused with %s", async (_service, code, change) => {
    const error = await expectRefusedWithoutWrites(database.current().db, change);
    expect(error.code).toBe(code);
    if (code === "VALIDATION_FAILED") expect(error.fieldErrors.length).toBeGreaterThan(0);
  });

  it("a missing or blank reason refuses every kind of change", async () => {
    for (const reason of ["", "   ", "two\nlines"]) {
      const error = await expectRefusedWithoutWrites(database.current().db, () =>
        updateTier(
          { name: "pro", expectedVersion: 1, displayName: "Pro" },
          { ...ctx, reason },
          deps,
        ),
      );
      expect(error.fieldErrors.map((fieldError) => fieldError.path)).toEqual(["reason"]);
    }
  });
});
