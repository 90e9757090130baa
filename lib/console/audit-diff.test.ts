import { describe, expect, it } from "vitest";
import {
  type AuditChange,
  describeLimitChange,
  diffAuditValues,
  formatDiffPath,
  renderValue,
} from "./audit-diff";

const tokenBucket = (capacity: number, refillPerSec: number) =>
  ({ algorithm: "token-bucket", capacity, refillPerSec }) as const;

function summary(changes: readonly AuditChange[]): string[] {
  return changes.map((c) => `${c.kind} ${c.path}: ${c.before ?? "∅"} → ${c.after ?? "∅"}`);
}

describe("diffAuditValues", () => {
  it("lists the changed leaf paths with old and new values", () => {
    const before = { name: "free", limit: { ...tokenBucket(20, 10), mode: "enforce" } };
    const after = { name: "free", limit: { ...tokenBucket(60, 30), mode: "enforce" } };
    expect(diffAuditValues(before, after)).toEqual([
      {
        kind: "changed",
        path: "limit.capacity",
        segments: [
          { type: "key", key: "limit" },
          { type: "key", key: "capacity" },
        ],
        before: "20",
        after: "60",
      },
      {
        kind: "changed",
        path: "limit.refillPerSec",
        segments: [
          { type: "key", key: "limit" },
          { type: "key", key: "refillPerSec" },
        ],
        before: "10",
        after: "30",
      },
    ]);
  });

  it("says added and removed fields, with whole sub-objects rendered compactly", () => {
    const changes = diffAuditValues(
      { id: "i1", ticketUrl: "https://t/1" },
      { id: "i1", limit: tokenBucket(5, 1) },
    );
    expect(summary(changes)).toEqual([
      'added limit: ∅ → {algorithm: "token-bucket", capacity: 5, refillPerSec: 1}',
      'removed ticketUrl: "https://t/1" → ∅',
    ]);
  });

  it("is in the same order whatever the key order of the JSON", () => {
    const a = diffAuditValues({ b: 1, a: 1, c: { y: 1, x: 1 } }, { c: { x: 2, y: 2 }, a: 2, b: 2 });
    const b = diffAuditValues({ c: { x: 1, y: 1 }, a: 1, b: 1 }, { a: 2, b: 2, c: { y: 2, x: 2 } });
    expect(a).toEqual(b);
    expect(a.map((c) => c.path)).toEqual(["a", "b", "c.x", "c.y"]);
  });

  it("matches array items by name, so an insertion is one added item, not a cascade", () => {
    const before = {
      tiers: [
        { name: "free", limit: tokenBucket(20, 10) },
        { name: "pro", limit: tokenBucket(100, 50) },
      ],
    };
    const after = {
      tiers: [
        { name: "enterprise", limit: tokenBucket(1000, 500) },
        { name: "free", limit: tokenBucket(20, 10) },
        { name: "pro", limit: tokenBucket(200, 50) },
      ],
    };
    expect(summary(diffAuditValues(before, after))).toEqual([
      'added tiers[name=enterprise]: ∅ → {limit: {algorithm: "token-bucket", capacity: 1000, refillPerSec: 500}, name: "enterprise"}',
      "changed tiers[name=pro].limit.capacity: 100 → 200",
    ]);
  });

  it("prefers id over name, lists removed items last, and ignores pure reordering", () => {
    const before = [
      { id: "a", name: "same" },
      { id: "b", name: "same" },
      { id: "c", name: "x" },
    ];
    const after = [
      { id: "c", name: "x" },
      { id: "a", name: "renamed" },
    ];
    expect(summary(diffAuditValues(before, after))).toEqual([
      'changed [id=a].name: "same" → "renamed"',
      'removed [id=b]: {id: "b", name: "same"} → ∅',
    ]);
  });

  it("falls back to positions when no key identifies the items", () => {
    const duplicateNames = diffAuditValues(
      { matches: [{ method: "GET", path: "/a" }] },
      {
        matches: [
          { method: "GET", path: "/b" },
          { method: "POST", path: "/b" },
        ],
      },
    );
    expect(summary(duplicateNames)).toEqual([
      'changed matches[0].path: "/a" → "/b"',
      'added matches[1]: ∅ → {method: "POST", path: "/b"}',
    ]);
    expect(summary(diffAuditValues([1, 2, 3], [1, 5]))).toEqual([
      "changed [1]: 2 → 5",
      "removed [2]: 3 → ∅",
    ]);
  });

  it('uses a custom natural key, and keeps the string "1" and the number 1 apart', () => {
    const changes = diffAuditValues(
      [{ customerId: "acme", limit: 1 }],
      [{ customerId: "acme", limit: 2 }],
      { naturalKeys: ["customerId"] },
    );
    expect(changes.map((c) => c.path)).toEqual(["[customerId=acme].limit"]);
    const mixed = diffAuditValues([{ id: 1, v: 1 }], [{ id: "1", v: 1 }]);
    expect(mixed.map((c) => `${c.kind} ${c.path}`)).toEqual(['added [id="1"]', "removed [id=1]"]);
  });

  it("a create lists each top-level field as added; a delete as removed", () => {
    expect(summary(diffAuditValues(null, { name: "pro", displayName: null }))).toEqual([
      "added displayName: ∅ → null",
      'added name: ∅ → "pro"',
    ]);
    expect(summary(diffAuditValues({ name: "pro" }, undefined))).toEqual([
      'removed name: "pro" → ∅',
    ]);
  });

  it("identical values give nothing; different kinds of value are one change", () => {
    expect(diffAuditValues({ a: [1, { b: 2 }] }, { a: [1, { b: 2 }] })).toEqual([]);
    expect(diffAuditValues(null, null)).toEqual([]);
    expect(summary(diffAuditValues({ a: [1] }, { a: { 0: 1 } }))).toEqual([
      'changed a: [1] → {"0": 1}',
    ]);
    expect(summary(diffAuditValues("x", 3))).toEqual(['changed : "x" → 3']);
    expect(summary(diffAuditValues({ a: null }, { a: 0 }))).toEqual(["changed a: null → 0"]);
  });

  it("treats an undefined field as absent", () => {
    expect(diffAuditValues({ a: 1, b: undefined }, { a: 1 })).toEqual([]);
  });

  it("renders text someone typed as a quoted literal, never as markup or structure", () => {
    const [change] = diffAuditValues(
      { reason: "ok" },
      { reason: '<img src=x onerror=alert(1)>\n"}, evil: {' },
    );
    expect(change?.after).toBe('"<img src=x onerror=alert(1)>\\n\\"}, evil: {"');
  });

  it("escapes invisible direction overrides so a value cannot reorder what is around it", () => {
    expect(renderValue("abc\u202edef")).toBe('"abc\\u202edef"');
    expect(renderValue("zero\u200bwidth")).toBe('"zero\\u200bwidth"');
  });

  it("quotes keys that are not plain names, in paths and values", () => {
    const changes = diffAuditValues(
      { "a b": 1, "x.y": { "<k>": 1 } },
      { "a b": 2, "x.y": { "<k>": 2 } },
    );
    expect(changes.map((c) => c.path)).toEqual(['["a b"]', '["x.y"]["<k>"]']);
    expect(renderValue({ "a b": 1 })).toBe('{"a b": 1}');
    expect(
      formatDiffPath([
        { type: "item", key: "name", value: "has space" },
        { type: "index", index: 3 },
      ]),
    ).toBe('[name="has space"][3]');
  });

  it("cuts long values with an ellipsis, without rendering all of a huge one", () => {
    const huge = Array.from({ length: 100_000 }, (_, i) => ({ id: i, note: "x".repeat(50) }));
    const text = renderValue(huge, 40);
    expect(text).toHaveLength(40);
    expect(text.endsWith("…")).toBe(true);
    const [change] = diffAuditValues(
      { note: "short" },
      { note: "y".repeat(500) },
      { maxValueLength: 20 },
    );
    expect(change?.after).toBe(`"${"y".repeat(18)}…`);
  });

  it("stays bounded on very deep nesting", () => {
    let before: unknown = 1;
    let after: unknown = 2;
    for (let i = 0; i < 5000; i++) {
      before = { n: before };
      after = { n: after };
    }
    const changes = diffAuditValues(before, after, { maxDepth: 4 });
    expect(changes).toHaveLength(1);
    expect(changes[0]?.path).toBe("n.n.n.n");
    expect(changes[0]?.before).toContain("{…}");
  });

  it("renders other values readably", () => {
    expect(renderValue(undefined)).toBe("(none)");
    expect(renderValue(true)).toBe("true");
    expect(renderValue(10n)).toBe("10");
    expect(renderValue(new Date(Date.UTC(2025, 0, 2)))).toBe("2025-01-02T00:00:00.000Z");
    expect(renderValue([])).toBe("[]");
    expect(renderValue({})).toBe("{}");
  });
});

describe("describeLimitChange", () => {
  it("names only what changed, in plain words", () => {
    expect(describeLimitChange(tokenBucket(20, 10), tokenBucket(60, 30))).toBe(
      "token bucket: capacity 20 → 60, refill 10/s → 30/s",
    );
    expect(describeLimitChange(tokenBucket(20, 10), tokenBucket(20, 0.5))).toBe(
      "token bucket: refill 10/s → 30/min",
    );
  });

  it("says windows and meters in their own terms", () => {
    expect(
      describeLimitChange(
        { algorithm: "fixed-window", limit: 100, windowMs: 60_000 },
        { algorithm: "fixed-window", limit: 100, windowMs: 30_000 },
      ),
    ).toBe("fixed window: window 1 min → 30 s");
    expect(
      describeLimitChange(
        { algorithm: "leaky-meter", burst: 5, drainPerSec: 1 },
        { algorithm: "leaky-meter", burst: 10, drainPerSec: 1 },
      ),
    ).toBe("leaky meter: burst 5 → 10");
  });

  it("says a change of mode and of what happens when Redis fails", () => {
    expect(
      describeLimitChange(
        { ...tokenBucket(20, 10), mode: "enforce", onStoreFailure: "open" },
        { ...tokenBucket(20, 10), mode: "dry-run", onStoreFailure: "closed" },
      ),
    ).toBe("token bucket: mode enforce → dry-run, if Redis fails: admit → reject");
    expect(
      describeLimitChange(tokenBucket(20, 10), { ...tokenBucket(20, 10), mode: "enforce" }),
    ).toBe("token bucket: unchanged (capacity 20, refill 10/s)");
  });

  it("describes a change of algorithm, an addition and a removal whole", () => {
    expect(
      describeLimitChange(tokenBucket(20, 10), {
        algorithm: "sliding-window",
        limit: 100,
        windowMs: 60_000,
        mode: "dry-run",
      }),
    ).toBe(
      "token bucket (capacity 20, refill 10/s) → sliding window (limit 100, window 1 min, dry-run)",
    );
    expect(describeLimitChange(null, tokenBucket(20, 10))).toBe(
      "none → token bucket (capacity 20, refill 10/s)",
    );
    expect(describeLimitChange(tokenBucket(20, 10), null)).toBe(
      "token bucket (capacity 20, refill 10/s) → none",
    );
    expect(describeLimitChange(null, null)).toBe("none");
  });

  it("shows exact numbers when rounding would make two values look the same", () => {
    expect(describeLimitChange(tokenBucket(20, 10), tokenBucket(20, 10.0001))).toBe(
      "token bucket: refill 10 → 10.0001",
    );
  });
});
