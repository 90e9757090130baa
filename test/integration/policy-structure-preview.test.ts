/**
 * The preview of creating and deleting tiers and endpoint classes and of editing the guardrails:
 * what it shows, what it refuses (at the caller's fields), that a deletion names what refers to
 * the entity in the words the deletion's own refusal uses, and that it writes nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ControlDeps } from "@/lib/control/deps";
import { raiseIncident } from "@/lib/control/incident/raise-incident";
import { previewStructureChange } from "@/lib/control/policy/preview-structure-change";
import { deleteTier } from "@/lib/control/tier/delete-tier";
import {
  countEverything,
  depsFor,
  importExamplePolicy,
  operatorContext,
} from "./helpers/policy-fixtures";
import { provideTestDatabase } from "./helpers/test-database";

const database = provideTestDatabase();
let deps: ControlDeps;
let before: Record<string, number>;
const bucket = { algorithm: "token-bucket" as const, capacity: 400, refillPerSec: 40 };

beforeAll(async () => {
  deps = depsFor(database.current().db);
  await importExamplePolicy(deps);
  before = await countEverything(deps.db);
});

afterAll(async () => {
  // Every preview above wrote nothing.
  expect(await countEverything(deps.db)).toEqual(before);
});

describe("previewStructureChange", () => {
  it("a new tier: its limit, reaching no customer yet", async () => {
    const preview = await previewStructureChange(
      { kind: "tier-create", tier: { name: "gold", limit: bucket } },
      deps,
    );
    expect(preview).toMatchObject({ subject: 'tier "gold"', isBlocked: false, referrers: [] });
    expect(preview.limits).toHaveLength(1);
    expect(preview.limits[0]).toMatchObject({
      scope: "tier:gold",
      before: null,
      after: { capacity: 400, refillPerSec: 40 },
      affected: { customersInScope: 0 },
    });
  });

  it("refuses a tier that exists, and a bad limit at the create endpoint's field", async () => {
    await expect(
      previewStructureChange({ kind: "tier-create", tier: { name: "free", limit: bucket } }, deps),
    ).rejects.toMatchObject({ code: "CONFLICT", fieldErrors: [{ path: "name" }] });
    await expect(
      previewStructureChange(
        { kind: "tier-create", tier: { name: "gold", limit: { ...bucket, capacity: -1 } } },
        deps,
      ),
    ).rejects.toMatchObject({
      code: "VALIDATION_FAILED",
      fieldErrors: [expect.objectContaining({ path: "limit.capacity" })],
    });
  });

  it("a new endpoint class: its match rule and cost; one another class has is refused", async () => {
    const preview = await previewStructureChange(
      {
        kind: "endpoint-class-create",
        endpointClass: {
          name: "exports",
          match: [{ method: "POST", path: "/v1/exports" }],
          cost: 5,
        },
      },
      deps,
    );
    expect(preview.fields.map((field) => field.field)).toEqual(["match", "cost"]);
    const reports = await deps.db.endpointClass.findUniqueOrThrow({ where: { name: "reports" } });
    const [rule] = reports.match as { method: string; path: string }[];
    await expect(
      previewStructureChange(
        {
          kind: "endpoint-class-create",
          endpointClass: { name: "copycat", match: rule === undefined ? [] : [rule] },
        },
        deps,
      ),
    ).rejects.toMatchObject({ code: "VALIDATION_FAILED" });
  });

  it("deleting a tier in use names its referrers in the words the deletion refuses with", async () => {
    const preview = await previewStructureChange({ kind: "tier-delete", name: "free" }, deps);
    expect(preview.isBlocked).toBe(true);
    expect(preview.referrers).toContain("the settings (defaultTier)");
    const refusal = await deleteTier(
      { name: "free", expectedVersion: preview.version },
      operatorContext(),
      deps,
    ).catch((error: unknown) => error);
    expect(refusal).toMatchObject({
      code: "CONFLICT",
      details: { referrers: preview.referrers },
    });
  });

  it("deleting an endpoint class with an override names it; an unknown one is NOT_FOUND", async () => {
    const preview = await previewStructureChange(
      { kind: "endpoint-class-delete", name: "reports" },
      deps,
    );
    expect(preview.isBlocked).toBe(true);
    expect(preview.referrers.join(" ")).toContain("customer:globex/endpoint:reports");
    await expect(
      previewStructureChange({ kind: "tier-delete", name: "nonesuch" }, deps),
    ).rejects.toMatchObject({ code: "NOT_FOUND" });
  });

  it("guardrails: the change in words", async () => {
    const preview = await previewStructureChange(
      { kind: "guardrails", guardrails: { maxIncidentFactor: 8 } },
      deps,
    );
    expect(preview.fields).toEqual([
      { owner: "guardrails", field: "maxIncidentFactor", before: "×10", after: "×8" },
    ]);
    expect(preview.isNoChange).toBe(false);
  });

  it.each([
    ["an unknown kind", { kind: "tier-rename", name: "free" }],
    ["a factor of 1", { kind: "guardrails", guardrails: { maxIncidentFactor: 1 } }],
    ["an unknown field", { kind: "tier-delete", name: "free", force: true }],
    ["a tier name with a newline", { kind: "tier-delete", name: "free\n" }],
  ])("refuses %s with a field error", async (_label, options) => {
    await expect(
      previewStructureChange(options as Parameters<typeof previewStructureChange>[0], deps),
    ).rejects.toMatchObject({ code: "VALIDATION_FAILED" });
  });
});

describe("previewStructureChange against a current incident", () => {
  it("refuses guardrails tighter than an incident in force, naming it", async () => {
    const raised = await raiseIncident(
      { customerId: "initech", factor: 5, durationMs: 900_000 },
      operatorContext("preview test"),
      deps,
    );
    before = await countEverything(deps.db);
    const error = await previewStructureChange(
      { kind: "guardrails", guardrails: { maxIncidentFactor: 4 } },
      deps,
    ).catch((caught: unknown) => caught);
    expect(error).toMatchObject({ code: "VALIDATION_FAILED" });
    expect(JSON.stringify(error)).toContain(raised.incident.id);
  });
});
