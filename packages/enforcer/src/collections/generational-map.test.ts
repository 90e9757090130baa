import { describe, expect, it } from "vitest";
import { GenerationalMap } from "./generational-map";

describe("GenerationalMap", () => {
  it("holds at most maxWeight, keeps a key in use, and drops what went unused for a generation", () => {
    const dropped: string[] = [];
    const map = new GenerationalMap<string, string>({
      maxWeight: 4,
      onDrop: (v) => dropped.push(v),
    });
    for (const key of ["a", "b", "c", "d"]) map.set(key, key.toUpperCase());
    expect(map.size).toBe(4);
    // "a" and "b" are the old generation. Using "a" moves it to a new young generation, which
    // drops the other old key, "b", unused since; "c" and "d" become the old generation.
    expect(map.get("a")).toBe("A");
    expect(dropped).toEqual(["B"]);
    map.set("e", "E");
    expect(map.size).toBe(4);
    expect(map.get("b")).toBeUndefined();
    expect(map.get("a")).toBe("A");
    expect(map.get("c")).toBe("C");
    for (let i = 0; i < 100; i++) {
      map.set(`k${i}`, `V${i}`);
      expect(map.weight).toBeLessThanOrEqual(4);
    }
  });

  it("counts each value's weight, taken out and put back when it changes", () => {
    const map = new GenerationalMap<string, number[]>({ maxWeight: 6, weightOf: (v) => v.length });
    const list = [1, 2];
    map.set("x", list);
    map.set("y", [1]);
    expect(map.weight).toBe(3);
    map.delete("x");
    list.push(3);
    map.set("x", list);
    expect(map.weight).toBe(4);
    map.set("z", [1, 2, 3]);
    expect(map.weight).toBeLessThanOrEqual(6);
    expect(map.get("z")).toEqual([1, 2, 3]);
  });

  it("delete takes a key out of the old generation too, without telling onDrop", () => {
    const dropped: string[] = [];
    const map = new GenerationalMap<string, string>({
      maxWeight: 4,
      onDrop: (v) => dropped.push(v),
    });
    for (const key of ["a", "b", "c"]) map.set(key, key.toUpperCase());
    // "a" and "b" are the old generation now.
    map.delete("a");
    expect(map.size).toBe(2);
    expect(map.weight).toBe(2);
    expect(map.get("a")).toBeUndefined();
    expect(dropped).toEqual([]);
  });

  it("with a bound of 1, a new key replaces the one held, and clear tells onDrop nothing", () => {
    const dropped: string[] = [];
    const map = new GenerationalMap<string, string>({
      maxWeight: 1,
      onDrop: (v) => dropped.push(v),
    });
    map.set("a", "A");
    map.set("b", "B");
    expect(map.size).toBe(1);
    expect(map.get("a")).toBeUndefined();
    expect(dropped).toEqual(["A"]);
    map.clear();
    expect(map.size).toBe(0);
    expect(dropped).toEqual(["A"]);
  });
});
