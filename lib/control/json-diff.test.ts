import { describe, expect, it } from "vitest";
import { describeChanges, diffJson } from "./json-diff";

describe("diffJson", () => {
  it.each([
    {
      name: "equal values have no changes",
      a: { x: 1, y: [1, 2] },
      b: { y: [1, 2], x: 1 },
      changes: [],
    },
    {
      name: "a changed leaf is named by its path",
      a: { limit: { capacity: 200, refillPerSec: 100 } },
      b: { limit: { capacity: 300, refillPerSec: 100 } },
      changes: [{ path: "limit.capacity", before: 200, after: 300 }],
    },
    {
      name: "added and removed fields",
      a: { displayName: "Pro" },
      b: { ceiling: null },
      changes: [
        { path: "ceiling", before: undefined, after: null },
        { path: "displayName", before: "Pro", after: undefined },
      ],
    },
    {
      name: "arrays of equal length compare item by item",
      a: { match: [{ path: "/a" }, { path: "/b" }] },
      b: { match: [{ path: "/a" }, { path: "/c" }] },
      changes: [{ path: "match[1].path", before: "/b", after: "/c" }],
    },
    {
      name: "arrays of different length differ as a whole",
      a: { match: [1] },
      b: { match: [1, 2] },
      changes: [{ path: "match", before: [1], after: [1, 2] }],
    },
    { name: "different roots", a: 1, b: "1", changes: [{ path: "(root)", before: 1, after: "1" }] },
  ])("$name", ({ a, b, changes }) => {
    expect(diffJson(a, b)).toEqual(changes);
  });
});

describe("describeChanges", () => {
  it("lists at most the first few changes and counts the rest", () => {
    const changes = diffJson({ a: 1, b: 2, c: 3 }, { a: 2, b: 3, c: 4 });
    expect(describeChanges(changes, 2)).toBe("a 1 → 2; b 2 → 3; and 1 more");
  });

  it("says (none) for a side that lacks the field", () => {
    expect(describeChanges(diffJson({}, { ticketUrl: "https://t" }))).toBe(
      'ticketUrl (none) → "https://t"',
    );
  });
});
