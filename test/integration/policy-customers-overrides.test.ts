import { resolveLimits } from "@limitplane/enforcer/policy";
import { beforeAll, describe, expect, it } from "vitest";
import { createCustomer } from "@/lib/control/customer/create-customer";
import { deleteCustomer } from "@/lib/control/customer/delete-customer";
import { getCustomer } from "@/lib/control/customer/get-customer";
import { listCustomers } from "@/lib/control/customer/list-customers";
import { updateCustomer } from "@/lib/control/customer/update-customer";
import { createCustomerOverride } from "@/lib/control/customer-override/create-customer-override";
import { deleteCustomerOverride } from "@/lib/control/customer-override/delete-customer-override";
import { listCustomerOverrides } from "@/lib/control/customer-override/list-customer-overrides";
import { updateCustomerOverride } from "@/lib/control/customer-override/update-customer-override";
import type { ControlDeps } from "@/lib/control/deps";
import { raiseIncident } from "@/lib/control/incident/raise-incident";
import {
  depsFor,
  expectOneAuditEntry,
  expectRefusedWithoutWrites,
  importExamplePolicy,
  latestSnapshot,
  operatorContext,
  uniqueName,
} from "./helpers/policy-fixtures";
import { provideTestDatabase } from "./helpers/test-database";

const database = provideTestDatabase();
let deps: ControlDeps;

beforeAll(async () => {
  deps = depsFor(database.current().db);
  await importExamplePolicy(deps);
});

const bucket = (capacity: number, refillPerSec: number) => ({
  algorithm: "token-bucket" as const,
  capacity,
  refillPerSec,
});

async function newCustomer(tier = "pro", displayName = "Test Customer"): Promise<string> {
  const id = uniqueName("cust");
  await createCustomer({ id, displayName, tier }, operatorContext(), deps);
  return id;
}

/** The enforced and dry-run checks a customer's request resolves to now. */
async function checksFor(customerId: string, tier: string, endpointClass: string) {
  const snapshot = await latestSnapshot(database.current().db);
  return resolveLimits(snapshot, { customerId, tier, endpointClass }, Date.now()).checks.map(
    (check) => ({ scope: check.scope, mode: check.mode, bucket: check.bucket }),
  );
}

describe("customers", () => {
  it("createCustomer adds to the registry with an audit entry and no policy version", async () => {
    const { db } = database.current();
    const id = uniqueName("org:acme");
    const { result, entry, before, after } = await expectOneAuditEntry(db, () =>
      createCustomer({ id, displayName: "Acme EU", tier: "pro" }, operatorContext("signed"), deps),
    );
    expect(result).toMatchObject({
      customer: { id, displayName: "Acme EU", tier: "pro", version: 1 },
      policyVersion: null,
      published: false,
    });
    expect(entry).toMatchObject({
      action: "customer.create",
      entityType: "customer",
      entityId: id,
      customerId: id,
      before: null,
      after: { id, displayName: "Acme EU", tier: "pro", version: 1 },
      reason: "signed",
      policyVersion: null,
    });
    expect(after.versions).toBe(before.versions);
    expect(after.outbox).toBe(before.outbox);
    expect(await getCustomer(id, deps)).toEqual(result.customer);
  });

  it.each([
    {
      name: "an unknown tier",
      options: () => ({ id: uniqueName("c"), displayName: "X", tier: "platinum" }),
      code: "VALIDATION_FAILED",
      fields: [{ path: "tier", message: 'there is no tier "platinum"' }],
    },
    {
      name: "an id with a space and a display name with a line break",
      options: () => ({ id: "has space", displayName: "Two\nlines", tier: "pro" }),
      code: "VALIDATION_FAILED",
      fields: [
        {
          path: "id",
          message:
            'customer id must be 1 to 128 characters of A-Z, a-z, 0-9, ".", "_", ":", "@" and "-", starting with a letter or digit',
        },
        {
          path: "displayName",
          message:
            "displayName must not contain control characters (line breaks, tabs) or bidirectional formatting characters",
        },
      ],
    },
    {
      name: "an existing id",
      options: () => ({ id: "acme", displayName: "Acme again", tier: "pro" }),
      code: "CONFLICT",
      fields: [{ path: "id", message: '"acme" is already taken' }],
    },
  ])("createCustomer refuses $name and writes nothing", async ({ options, code, fields }) => {
    const error = await expectRefusedWithoutWrites(database.current().db, () =>
      createCustomer(options(), operatorContext(), deps),
    );
    expect(error.code).toBe(code);
    expect(error.fieldErrors).toEqual(fields);
  });

  it("updateCustomer moves a customer to another tier; stale and unknown ones are refused", async () => {
    const { db } = database.current();
    const id = await newCustomer("free");
    const { result, entry } = await expectOneAuditEntry(db, () =>
      updateCustomer(
        { id, expectedVersion: 1, tier: "enterprise" },
        operatorContext("upgrade"),
        deps,
      ),
    );
    expect(result.customer).toMatchObject({ tier: "enterprise", version: 2 });
    expect(entry).toMatchObject({
      action: "customer.update",
      customerId: id,
      before: { tier: "free", version: 1 },
      after: { tier: "enterprise", version: 2 },
      policyVersion: null,
    });
    const stale = await expectRefusedWithoutWrites(db, () =>
      updateCustomer({ id, expectedVersion: 1, displayName: "Renamed" }, operatorContext(), deps),
    );
    expect(stale.code).toBe("VERSION_CONFLICT");
    expect(stale.message).toContain('What changed: tier "free" → "enterprise".');
    const unknown = await expectRefusedWithoutWrites(db, () =>
      updateCustomer(
        { id: "nobody", expectedVersion: 1, displayName: "X" },
        operatorContext(),
        deps,
      ),
    );
    expect(unknown.code).toBe("NOT_FOUND");
  });

  it("a tier change that would break a current incident's guardrail is refused, naming it", async () => {
    const { db } = database.current();
    const id = await newCustomer("enterprise");
    const { incident } = await raiseIncident(
      { customerId: id, limit: bucket(20_000, 4_000), durationMs: 3_600_000 },
      operatorContext("big import"),
      deps,
    );
    const error = await expectRefusedWithoutWrites(db, () =>
      updateCustomer({ id, expectedVersion: 1, tier: "free" }, operatorContext(), deps),
    );
    expect(error.fieldErrors).toContainEqual({
      path: `incidentOverrides["${incident.id}"].limit.capacity`,
      message: `incident "${incident.id}": capacity 20000 against 20 in the limit it replaces would raise the limit 1000x; the maximum raise is 10x (guardrails.maxIncidentFactor)`,
    });
  });

  it("deleting a customer with an override is refused; without one it is deleted", async () => {
    const { db } = database.current();
    const withOverride = await expectRefusedWithoutWrites(db, () =>
      deleteCustomer({ id: "globex", expectedVersion: 1 }, operatorContext(), deps),
    );
    expect(withOverride.message).toBe(
      'customer "globex" still has customer override "customer:globex/endpoint:reports"; delete or revert those first.',
    );
    const id = await newCustomer();
    const { entry } = await expectOneAuditEntry(db, () =>
      deleteCustomer({ id, expectedVersion: 1 }, operatorContext("churned"), deps),
    );
    expect(entry).toMatchObject({ action: "customer.delete", customerId: id, after: null });
    expect((await expectRefusedWithoutWrites(db, () => getCustomer(id, deps))).code).toBe(
      "NOT_FOUND",
    );
  });

  it("listCustomers searches by id prefix or name substring, ignoring case, a page at a time", async () => {
    const tag = uniqueName("srch");
    const ids = [`${tag}-a`, `${tag}-b`, `${tag}-c`];
    for (const id of ids) {
      await createCustomer(
        { id, displayName: `Name ${id}`, tier: "free" },
        operatorContext(),
        deps,
      );
    }
    await createCustomer(
      {
        id: uniqueName("zz-other"),
        displayName: `Mentions ${tag.toUpperCase()} Ltd`,
        tier: "free",
      },
      operatorContext(),
      deps,
    );
    const byPrefix = await listCustomers({ search: tag.toUpperCase(), limit: 2 }, deps);
    expect(byPrefix.customers.map((customer) => customer.id)).toEqual(ids.slice(0, 2));
    expect(byPrefix.nextCursor).toBe(ids[1]);
    const rest = await listCustomers(
      { search: tag, limit: 2, after: byPrefix.nextCursor ?? "" },
      deps,
    );
    expect(rest.customers.map((customer) => customer.displayName)).toEqual([
      `Name ${ids[2]}`,
      `Mentions ${tag.toUpperCase()} Ltd`,
    ]);
    expect(rest.nextCursor).toBeNull();
    const byName = await listCustomers({ search: "mentions", tier: "free" }, deps);
    expect(byName.customers.map((customer) => customer.displayName)).toEqual([
      `Mentions ${tag.toUpperCase()} Ltd`,
    ]);
  });

  it("listCustomers takes % and _ in a search literally", async () => {
    const tag = uniqueName("lit");
    await createCustomer(
      { id: `${tag}_x`, displayName: "100% real", tier: "free" },
      operatorContext(),
      deps,
    );
    await createCustomer(
      { id: `${tag}-x`, displayName: "1000 real", tier: "free" },
      operatorContext(),
      deps,
    );
    expect((await listCustomers({ search: `${tag}_` }, deps)).customers.map((c) => c.id)).toEqual([
      `${tag}_x`,
    ]);
    expect((await listCustomers({ search: "100%" }, deps)).customers.map((c) => c.id)).toEqual([
      `${tag}_x`,
    ]);
  });
});

describe("customer overrides", () => {
  it("createCustomerOverride compiles into the snapshot; a raise above the ceiling is stored and the ceiling still binds", async () => {
    const { db } = database.current();
    const id = await newCustomer("pro");
    const { result, entry } = await expectOneAuditEntry(db, () =>
      createCustomerOverride(
        { customerId: id, endpointClass: null, limit: bucket(50_000, 5_000) },
        operatorContext("contract"),
        deps,
      ),
    );
    const scope = `customer:${id}`;
    expect(result.override).toMatchObject({
      scope,
      customerId: id,
      endpointClass: null,
      version: 1,
    });
    expect(result.policyVersion).not.toBeNull();
    expect(entry).toMatchObject({
      action: "override.create",
      entityType: "customer-override",
      entityId: scope,
      customerId: id,
      after: { scope, limit: { capacity: 50_000, mode: "enforce", onStoreFailure: "open" } },
      policyVersion: result.policyVersion,
    });
    expect((await latestSnapshot(db)).policy.customerOverrides).toContainEqual({
      customerId: id,
      endpointClass: null,
      limit: { ...bucket(50_000, 5_000), mode: "enforce", onStoreFailure: "open" },
    });
    expect(await checksFor(id, "pro", "default")).toEqual([
      { scope, mode: "enforce", bucket: "account" },
      { scope: "ceiling", mode: "enforce", bucket: "ceiling" },
    ]);
  });

  it("overlapping overrides: one for all endpoints and one for a class each replace their own layer", async () => {
    const id = await newCustomer("free");
    await createCustomerOverride(
      { customerId: id, endpointClass: null, limit: bucket(100, 20) },
      operatorContext(),
      deps,
    );
    await createCustomerOverride(
      { customerId: id, endpointClass: "search", limit: bucket(40, 4) },
      operatorContext(),
      deps,
    );
    expect(await checksFor(id, "free", "search")).toEqual([
      { scope: `customer:${id}`, mode: "enforce", bucket: "account" },
      { scope: `customer:${id}/endpoint:search`, mode: "enforce", bucket: "endpoint:search" },
      { scope: "ceiling", mode: "enforce", bucket: "ceiling" },
    ]);
    expect((await listCustomerOverrides(id, deps)).map((override) => override.scope)).toEqual([
      `customer:${id}`,
      `customer:${id}/endpoint:search`,
    ]);
  });

  it("an override turned off falls back to the tier's limit, and a dry-run one runs beside it", async () => {
    const id = await newCustomer("free");
    await createCustomerOverride(
      { customerId: id, endpointClass: "search", limit: { ...bucket(40, 4), mode: "off" } },
      operatorContext(),
      deps,
    );
    expect(await checksFor(id, "free", "search")).toContainEqual({
      scope: "tier:free/endpoint:search",
      mode: "enforce",
      bucket: "endpoint:search",
    });
    await updateCustomerOverride(
      {
        customerId: id,
        endpointClass: "search",
        expectedVersion: 1,
        limit: { ...bucket(10, 1), mode: "dry-run" },
      },
      operatorContext(),
      deps,
    );
    const checks = await checksFor(id, "free", "search");
    expect(checks).toContainEqual({
      scope: "tier:free/endpoint:search",
      mode: "enforce",
      bucket: "endpoint:search",
    });
    expect(checks).toContainEqual({
      scope: `customer:${id}/endpoint:search`,
      mode: "dry-run",
      bucket: `dry-run/customer:${id}/endpoint:search`,
    });
  });

  it.each([
    {
      name: "an unknown customer is NOT_FOUND",
      options: () => ({ customerId: "nobody", endpointClass: null, limit: bucket(10, 1) }),
      code: "NOT_FOUND",
    },
    {
      name: "an unknown endpoint class is refused at the field",
      options: () => ({ customerId: "acme", endpointClass: "nothing", limit: bucket(10, 1) }),
      code: "VALIDATION_FAILED",
    },
    {
      name: "a second override for the same layer is a conflict",
      options: () => ({ customerId: "globex", endpointClass: "reports", limit: bucket(10, 1) }),
      code: "CONFLICT",
    },
    {
      name: "a limit that cannot hold one request of the class is refused at the limit",
      options: () => ({ customerId: "acme", endpointClass: "reports", limit: bucket(5, 1) }),
      code: "VALIDATION_FAILED",
    },
  ])("createCustomerOverride: $name, writing nothing", async ({ options, code }) => {
    const error = await expectRefusedWithoutWrites(database.current().db, () =>
      createCustomerOverride(options(), operatorContext(), deps),
    );
    expect(error.code).toBe(code);
    if (code === "VALIDATION_FAILED") {
      expect(error.fieldErrors.map((fieldError) => fieldError.path)).toEqual([
        expect.stringMatching(/^(endpointClass|limit\.capacity)$/),
      ]);
    }
  });

  it("update and delete carry the version; stale or missing ones write nothing", async () => {
    const { db } = database.current();
    const id = await newCustomer("pro");
    await createCustomerOverride(
      { customerId: id, endpointClass: "reports", limit: bucket(500, 25) },
      operatorContext(),
      deps,
    );
    const { entry } = await expectOneAuditEntry(db, () =>
      updateCustomerOverride(
        { customerId: id, endpointClass: "reports", expectedVersion: 1, limit: bucket(600, 30) },
        operatorContext(),
        deps,
      ),
    );
    expect(entry).toMatchObject({
      action: "override.update",
      before: { limit: { capacity: 500 }, version: 1 },
      after: { limit: { capacity: 600 }, version: 2 },
    });
    const stale = await expectRefusedWithoutWrites(db, () =>
      deleteCustomerOverride(
        { customerId: id, endpointClass: "reports", expectedVersion: 1 },
        operatorContext(),
        deps,
      ),
    );
    expect(stale.code).toBe("VERSION_CONFLICT");
    const missing = await expectRefusedWithoutWrites(db, () =>
      deleteCustomerOverride(
        { customerId: id, endpointClass: null, expectedVersion: 1 },
        operatorContext(),
        deps,
      ),
    );
    expect(missing.message).toBe(`Customer "${id}" has no override for all endpoints.`);
    const { entry: deleted } = await expectOneAuditEntry(db, () =>
      deleteCustomerOverride(
        { customerId: id, endpointClass: "reports", expectedVersion: 2 },
        operatorContext(),
        deps,
      ),
    );
    expect(deleted).toMatchObject({
      action: "override.delete",
      after: null,
      before: { version: 2 },
    });
    expect(await checksFor(id, "pro", "reports")).toContainEqual({
      scope: "tier:pro/endpoint:reports",
      mode: "enforce",
      bucket: "endpoint:reports",
    });
  });
});
