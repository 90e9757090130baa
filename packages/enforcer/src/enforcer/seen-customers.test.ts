import { describe, expect, it } from "vitest";
import { ManualClock } from "../limiter/clock";
import { SeenCustomers, type SeenCustomersOptions } from "./seen-customers";

/** 10:00:00.000 UTC on a fixed day: the start of an hour. */
const WALL_T0 = Date.UTC(2026, 0, 15, 10, 0, 0);

function seenAt(options: SeenCustomersOptions = {}) {
  const wall = new ManualClock(WALL_T0);
  return { seen: new SeenCustomers({ ...options, wallClock: wall }), wall };
}

describe("SeenCustomers", () => {
  it("reports an identified customer once with the tier it arrived with", () => {
    const { seen } = seenAt();
    seen.record("acme", "pro");
    seen.record("acme", "pro");
    expect(seen.drain()).toEqual({
      sightings: [{ customerId: "acme", tierField: "pro", atMs: WALL_T0 }],
      overflow: null,
    });
    expect(seen.drain().sightings).toEqual([]);
  });

  it("reports a customer seen again only after the report interval", () => {
    const { seen, wall } = seenAt({ reportIntervalMs: 60_000 });
    seen.record("acme", "pro");
    seen.drain();
    wall.advance(59_999);
    seen.record("acme", "pro");
    expect(seen.drain().sightings).toEqual([]);
    wall.advance(1);
    seen.record("acme", "pro");
    expect(seen.drain().sightings).toEqual([
      { customerId: "acme", tierField: "pro", atMs: WALL_T0 + 60_000 },
    ]);
  });

  it.each([
    ["an empty id", ""],
    ["a path", "../etc/passwd"],
    ["a script", "<script>alert(1)</script>"],
    ["a newline", "acme\nevil"],
    ["a braced hash tag", "{acme}"],
    ["129 characters", `a${"b".repeat(128)}`],
  ])("ignores %s as a customer id", (_label, id) => {
    const { seen } = seenAt();
    seen.record(id, "pro");
    expect(seen.drain()).toEqual({ sightings: [], overflow: null });
    expect(seen.overflowCount).toBe(0);
  });

  it.each([
    ["no tier", null, "-"],
    ["an empty tier", "", "-"],
    ["an uppercase tier", "PRO", "-"],
    ["a tier with a newline", "pro\n", "-"],
    ["a 64-character tier", `p${"r".repeat(63)}`, "-"],
    ["the hash field of no tier itself", "-", "-"],
    ["a tier name", "enterprise", "enterprise"],
  ])("reports %s as %s", (_label, tier, field) => {
    const { seen } = seenAt();
    seen.record("acme", tier);
    expect(seen.drain().sightings.map((s) => s.tierField)).toEqual([field]);
  });

  it("reports at most maxCustomersPerHour customers and counts every sighting beyond", () => {
    const { seen } = seenAt({ maxCustomersPerHour: 3 });
    for (let index = 0; index < 10; index++) seen.record(`key-${index}`, "free");
    seen.record("key-0", "free"); // already reported: neither new nor overflow
    const drained = seen.drain();
    expect(drained.sightings.map((s) => s.customerId)).toEqual(["key-0", "key-1", "key-2"]);
    expect(drained.overflow).toEqual({ hour: Math.floor(WALL_T0 / 3_600_000), count: 7 });
    expect(seen.overflowCount).toBe(7);
    expect(seen.drain().overflow).toBeNull();
  });

  it("reports at most maxTiersPerCustomer tiers per customer", () => {
    const { seen } = seenAt({ maxTiersPerCustomer: 2 });
    for (const tier of ["free", "pro", "enterprise", "gold"]) seen.record("acme", tier);
    const drained = seen.drain();
    expect(drained.sightings.map((s) => s.tierField)).toEqual(["free", "pro"]);
    expect(drained.overflow?.count).toBe(2);
  });

  it("starts every wall-clock hour with a fresh cap", () => {
    const { seen, wall } = seenAt({ maxCustomersPerHour: 1 });
    seen.record("first", null);
    seen.record("second", null);
    expect(seen.overflowCount).toBe(1);
    wall.advance(3_600_000);
    seen.record("second", null);
    expect(seen.overflowCount).toBe(0);
    expect(seen.drain().sightings.map((s) => s.customerId)).toEqual(["first", "second"]);
  });

  it("holds at most the hour's cap while nothing is flushed (Redis down)", () => {
    const { seen } = seenAt({ maxCustomersPerHour: 100, maxTiersPerCustomer: 1 });
    for (let index = 0; index < 50_000; index++) seen.record(`hostile-${index}`, `t${index}`);
    expect(seen.pendingCount).toBe(100);
    expect(seen.overflowCount).toBe(49_900);
  });

  it.each([
    ["maxCustomersPerHour", { maxCustomersPerHour: 0 }],
    ["maxTiersPerCustomer", { maxTiersPerCustomer: 1.5 }],
    ["reportIntervalMs", { reportIntervalMs: Number.NaN }],
  ])("refuses a bad %s", (name, options) => {
    expect(() => seenAt(options)).toThrow(
      new RegExp(`seenCustomers.${name} must be a whole number`),
    );
  });
});
