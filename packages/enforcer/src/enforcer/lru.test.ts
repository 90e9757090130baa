import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { BoundedLru } from "./lru";

describe("BoundedLru", () => {
  it("evicts the least recently used entry, where get counts as use and peek does not", () => {
    const lru = new BoundedLru<string, number>(3);
    lru.set("a", 1);
    lru.set("b", 2);
    lru.set("c", 3);
    lru.get("a");
    lru.peek("b");
    expect(lru.set("d", 4)).toEqual({ key: "b", value: 2 });
    expect([...lru.entries()]).toEqual([
      ["c", 3],
      ["a", 1],
      ["d", 4],
    ]);
  });

  it("updating a key keeps one entry and makes it the most recent", () => {
    const lru = new BoundedLru<string, number>(2);
    lru.set("a", 1);
    lru.set("b", 2);
    expect(lru.set("a", 10)).toBeNull();
    lru.set("c", 3);
    expect([...lru.entries()]).toEqual([
      ["a", 10],
      ["c", 3],
    ]);
  });

  it("stays within its bound under a flood of unique keys", () => {
    const lru = new BoundedLru<number, number>(1_000);
    for (let i = 0; i < 100_000; i++) lru.set(i, i);
    expect(lru.size).toBe(1_000);
    expect(lru.peek(99_999)).toBe(99_999);
    expect(lru.peek(98_999)).toBeUndefined();
  });

  it("agrees with a simple reference model over any sequence of operations", () => {
    const operation = fc.record({
      kind: fc.constantFrom("get", "set", "delete"),
      key: fc.integer({ min: 0, max: 7 }),
    });
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 5 }), fc.array(operation), (maxEntries, operations) => {
        const lru = new BoundedLru<number, number>(maxEntries);
        let model: number[] = []; // least recent first
        operations.forEach(({ kind, key }, step) => {
          const isPresent = model.includes(key);
          if (kind === "get") {
            expect(lru.get(key)).toBe(isPresent ? lru.peek(key) : undefined);
            if (isPresent) model = [...model.filter((k) => k !== key), key];
          } else if (kind === "set") {
            lru.set(key, step);
            model = [...model.filter((k) => k !== key), key];
            if (model.length > maxEntries) model = model.slice(1);
          } else {
            expect(lru.delete(key)).toBe(isPresent);
            model = model.filter((k) => k !== key);
          }
          expect([...lru.entries()].map(([k]) => k)).toEqual(model);
          expect(lru.size).toBe(model.length);
        });
      }),
    );
  });

  it.each([0, 1.5, -1])("refuses a bound of %d", (maxEntries) => {
    expect(() => new BoundedLru(maxEntries)).toThrow(RangeError);
  });
});
