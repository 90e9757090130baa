/**
 * A readable diff of an audit entry's `before` and `after` JSON: the paths that changed, each with
 * its old and new value rendered compactly as text, in an order that does not depend on how the
 * JSON's keys happened to be ordered (Postgres `jsonb` does not keep them). Arrays of objects that
 * carry a natural key (`id`, `name`) are matched by it, so inserting a tier does not show every
 * later tier as changed; other arrays are matched by position.
 *
 * Rendered values are plain strings: a page shows them as text (React escapes them), and strings
 * are quoted with control and direction-override characters escaped, so a customer's name cannot
 * pass itself off as structure or reorder what is around it.
 */
import type { LimitSpec } from "@limitplane/enforcer/limiter";
import { assertNever } from "@limitplane/enforcer/policy";
import { compareCodeUnits } from "@/lib/control/metric-minute/minute-counts";
import { formatAlgorithm, formatDurationMs, formatNumber, formatRatePerSec } from "./format";

/** One step of a path: an object key, an array position, or an array item found by its key. */
export type DiffPathSegment =
  | { readonly type: "key"; readonly key: string }
  | { readonly type: "index"; readonly index: number }
  | { readonly type: "item"; readonly key: string; readonly value: string | number };

export type AuditChangeKind = "added" | "removed" | "changed";

export interface AuditChange {
  readonly kind: AuditChangeKind;
  /** The path as text: `limit.capacity`, `tiers[name=pro].limit`, `matches[0]`; `""` for the whole value. */
  readonly path: string;
  readonly segments: readonly DiffPathSegment[];
  /** The old value rendered; `null` when added. */
  readonly before: string | null;
  /** The new value rendered; `null` when removed. */
  readonly after: string | null;
}

export interface AuditDiffOptions {
  /**
   * Fields that identify an item in an array of objects, tried in order. The first that every
   * item on both sides has (a string or a finite number), unique on each side, matches items;
   * without one, items are matched by position.
   * @default ["id", "name"]
   */
  naturalKeys?: readonly string[];
  /**
   * Longest rendered value, in characters; longer values end with `…`.
   * @default 120
   */
  maxValueLength?: number;
  /**
   * Deepest path followed; below it a difference is reported as one changed value.
   * @default 16
   */
  maxDepth?: number;
}

interface ResolvedDiffOptions {
  readonly naturalKeys: readonly string[];
  readonly maxValueLength: number;
  readonly maxDepth: number;
}

type JsonObject = { readonly [key: string]: unknown };

function isPlainObject(value: unknown): value is JsonObject {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  const prototype: unknown = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
}

/** Own keys with a defined value, in code-unit order. */
function definedKeys(value: JsonObject): string[] {
  return Object.keys(value)
    .filter((key) => value[key] !== undefined)
    .sort(compareCodeUnits);
}

function isDeepEqual(a: unknown, b: unknown, depth: number): boolean {
  if (Object.is(a, b)) return true;
  if (depth > 64) return false;
  if (Array.isArray(a) && Array.isArray(b)) {
    return a.length === b.length && a.every((item, i) => isDeepEqual(item, b[i], depth + 1));
  }
  if (isPlainObject(a) && isPlainObject(b)) {
    const keysA = definedKeys(a);
    const keysB = definedKeys(b);
    return (
      keysA.length === keysB.length &&
      keysA.every((key, i) => key === keysB[i] && isDeepEqual(a[key], b[key], depth + 1))
    );
  }
  return false;
}

function naturalKeyValue(item: unknown, key: string): string | number | undefined {
  if (!isPlainObject(item)) return undefined;
  const value = item[key];
  if (typeof value === "string") return value;
  if (typeof value === "number" && Number.isFinite(value)) return value;
  return undefined;
}

/** The natural key shared by every item of both arrays, unique on each side, if any. */
function findNaturalKey(
  a: readonly unknown[],
  b: readonly unknown[],
  candidates: readonly string[],
): string | null {
  if (a.length === 0 && b.length === 0) return null;
  for (const key of candidates) {
    const isUsable = [a, b].every((items) => {
      const seen = new Set<string>();
      for (const item of items) {
        const value = naturalKeyValue(item, key);
        if (value === undefined) return false;
        // Typed so the string "1" and the number 1 are different identities.
        const identity = `${typeof value}:${value}`;
        if (seen.has(identity)) return false;
        seen.add(identity);
      }
      return true;
    });
    if (isUsable) return key;
  }
  return null;
}

class DiffCollector {
  readonly changes: AuditChange[] = [];
  constructor(private readonly options: ResolvedDiffOptions) {}

  private push(
    kind: AuditChangeKind,
    segments: readonly DiffPathSegment[],
    before: unknown,
    after: unknown,
  ): void {
    const render = (value: unknown) => renderValue(value, this.options.maxValueLength);
    this.changes.push({
      kind,
      path: formatDiffPath(segments),
      segments,
      before: kind === "added" ? null : render(before),
      after: kind === "removed" ? null : render(after),
    });
  }

  diff(before: unknown, after: unknown, segments: readonly DiffPathSegment[]): void {
    if (isDeepEqual(before, after, 0)) return;
    if (segments.length >= this.options.maxDepth) {
      this.push("changed", segments, before, after);
      return;
    }
    if (isPlainObject(before) && isPlainObject(after)) {
      this.diffObjects(before, after, segments);
    } else if (Array.isArray(before) && Array.isArray(after)) {
      this.diffArrays(before, after, segments);
    } else {
      this.push("changed", segments, before, after);
    }
  }

  diffObjects(before: JsonObject, after: JsonObject, segments: readonly DiffPathSegment[]): void {
    const keys = [...new Set([...definedKeys(before), ...definedKeys(after)])].sort(
      compareCodeUnits,
    );
    for (const key of keys) {
      const path = [...segments, { type: "key", key } as const];
      const old = before[key];
      const next = after[key];
      if (old === undefined) this.push("added", path, undefined, next);
      else if (next === undefined) this.push("removed", path, old, undefined);
      else this.diff(old, next, path);
    }
  }

  diffArrays(
    before: readonly unknown[],
    after: readonly unknown[],
    segments: readonly DiffPathSegment[],
  ): void {
    const key = findNaturalKey(before, after, this.options.naturalKeys);
    if (key === null) {
      const length = Math.max(before.length, after.length);
      for (let index = 0; index < length; index++) {
        const path = [...segments, { type: "index", index } as const];
        if (index >= before.length) this.push("added", path, undefined, after[index]);
        else if (index >= after.length) this.push("removed", path, before[index], undefined);
        else this.diff(before[index], after[index], path);
      }
      return;
    }
    const identity = (item: unknown) => {
      const value = naturalKeyValue(item, key);
      return `${typeof value}:${value}`;
    };
    const beforeByKey = new Map(before.map((item) => [identity(item), item]));
    const afterKeys = new Set(after.map(identity));
    // Items present after, in their new order; then removed items, in their old order. A pure
    // reordering is not a change: the items are a set identified by their key.
    for (const item of after) {
      const value = naturalKeyValue(item, key) ?? "";
      const path = [...segments, { type: "item", key, value } as const];
      const old = beforeByKey.get(identity(item));
      if (old === undefined) this.push("added", path, undefined, item);
      else this.diff(old, item, path);
    }
    for (const item of before) {
      if (afterKeys.has(identity(item))) continue;
      const value = naturalKeyValue(item, key) ?? "";
      this.push("removed", [...segments, { type: "item", key, value }], item, undefined);
    }
  }
}

/**
 * The changes from `before` to `after`. `null` or `undefined` on one side (a create or a delete)
 * lists each top-level field of the other side as added or removed. Identical values give `[]`.
 */
export function diffAuditValues(
  before: unknown,
  after: unknown,
  options: AuditDiffOptions = {},
): AuditChange[] {
  const collector = new DiffCollector({
    naturalKeys: options.naturalKeys ?? ["id", "name"],
    maxValueLength: Math.max(8, options.maxValueLength ?? 120),
    maxDepth: Math.max(1, options.maxDepth ?? 16),
  });
  const isAbsent = (value: unknown) => value === null || value === undefined;
  if (isAbsent(before) && isPlainObject(after)) collector.diffObjects({}, after, []);
  else if (isPlainObject(before) && isAbsent(after)) collector.diffObjects(before, {}, []);
  else if (isAbsent(before) && isAbsent(after)) return [];
  else collector.diff(before, after, []);
  return collector.changes;
}

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;
const BARE_ITEM_KEY = /^[A-Za-z0-9_.:@/-]+$/;

/** `[key(limit), key(capacity)]` → `limit.capacity`; items `[name=pro]`; odd keys `["a b"]`. */
export function formatDiffPath(segments: readonly DiffPathSegment[]): string {
  let path = "";
  for (const segment of segments) {
    switch (segment.type) {
      case "key":
        path += IDENTIFIER.test(segment.key)
          ? `${path === "" ? "" : "."}${segment.key}`
          : `[${quote(segment.key)}]`;
        break;
      case "index":
        path += `[${segment.index}]`;
        break;
      case "item": {
        // A string that reads as a number is quoted, so `[id="1"]` and `[id=1]` stay apart.
        const value =
          typeof segment.value === "string" &&
          BARE_ITEM_KEY.test(segment.value) &&
          !Number.isFinite(Number(segment.value))
            ? segment.value
            : typeof segment.value === "number"
              ? String(segment.value)
              : quote(segment.value);
        path += `[${segment.key}=${value}]`;
        break;
      }
    }
  }
  return path;
}

// Bidirectional overrides and isolates, zero-width and line/paragraph separators: invisible
// characters that could make a value read as something else.
const INVISIBLE = /[\u200b-\u200f\u2028\u2029\u202a-\u202e\u2060\u2066-\u2069\ufeff]/g;

/** A string as a quoted literal with control and invisible characters escaped. */
function quote(text: string): string {
  return JSON.stringify(text).replace(
    INVISIBLE,
    (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
}

/**
 * A value as compact text: strings quoted (`"pro"`), numbers, booleans and `null` as written,
 * arrays `[1, 2]`, objects `{capacity: 20, refillPerSec: 10}` with keys in code-unit order;
 * `undefined` as `(none)`. Cut to `maxLength` characters with `…`.
 * @param maxLength @default 120
 */
export function renderValue(value: unknown, maxLength = 120): string {
  const budget = { remaining: maxLength + 1 };
  const text = renderInto(value, budget, 0);
  return text.length > maxLength ? `${text.slice(0, Math.max(0, maxLength - 1))}…` : text;
}

function renderInto(value: unknown, budget: { remaining: number }, depth: number): string {
  // Stop building once the result is certain to be cut: a huge value costs what is shown. Each
  // call charges the budget only for the characters it writes itself (brackets, separators, keys,
  // leaves), so nested values are not counted twice.
  if (budget.remaining <= 0) return "";
  const leaf = (text: string) => {
    budget.remaining -= text.length;
    return text;
  };
  if (value === undefined) return leaf("(none)");
  if (value === null) return leaf("null");
  if (typeof value === "string") return leaf(quote(value));
  if (typeof value === "number" || typeof value === "boolean" || typeof value === "bigint") {
    return leaf(String(value));
  }
  if (value instanceof Date) {
    return leaf(Number.isNaN(value.getTime()) ? "Invalid Date" : value.toISOString());
  }
  if (Array.isArray(value)) {
    if (depth >= 16) return leaf("[…]");
    budget.remaining -= 2;
    const parts: string[] = [];
    for (const item of value) {
      if (budget.remaining <= 0) break;
      if (parts.length > 0) budget.remaining -= 2;
      parts.push(renderInto(item, budget, depth + 1));
    }
    return `[${parts.join(", ")}]`;
  }
  if (isPlainObject(value)) {
    if (depth >= 16) return leaf("{…}");
    budget.remaining -= 2;
    const parts: string[] = [];
    for (const key of definedKeys(value)) {
      if (budget.remaining <= 0) break;
      const name = IDENTIFIER.test(key) ? key : quote(key);
      budget.remaining -= name.length + 2 + (parts.length > 0 ? 2 : 0);
      parts.push(`${name}: ${renderInto(value[key], budget, depth + 1)}`);
    }
    return `{${parts.join(", ")}}`;
  }
  return leaf(`(${typeof value})`);
}

// ---------------------------------------------------------------------------------------------
// Limits in plain words

/** A limit as stored: the algorithm's fields and, when known, its mode and store-failure policy. */
export type DescribableLimit = LimitSpec & {
  readonly mode?: "enforce" | "dry-run" | "off";
  readonly onStoreFailure?: "open" | "closed" | "local";
};

interface LimitField {
  readonly name: string;
  readonly value: number;
  readonly text: string;
}

function limitFields(limit: LimitSpec): LimitField[] {
  switch (limit.algorithm) {
    case "token-bucket":
      return [
        { name: "capacity", value: limit.capacity, text: formatNumber(limit.capacity) },
        { name: "refill", value: limit.refillPerSec, text: formatRatePerSec(limit.refillPerSec) },
      ];
    case "leaky-meter":
      return [
        { name: "burst", value: limit.burst, text: formatNumber(limit.burst) },
        { name: "drain", value: limit.drainPerSec, text: formatRatePerSec(limit.drainPerSec) },
      ];
    case "fixed-window":
    case "sliding-log":
    case "sliding-window":
      return [
        { name: "limit", value: limit.limit, text: formatNumber(limit.limit) },
        { name: "window", value: limit.windowMs, text: formatDurationMs(limit.windowMs) },
      ];
    default:
      return assertNever(limit);
  }
}

const STORE_FAILURE_WORDS: Record<NonNullable<DescribableLimit["onStoreFailure"]>, string> = {
  open: "admit",
  closed: "reject",
  local: "local quota",
};

function describeLimitAlone(limit: DescribableLimit): string {
  const fields = limitFields(limit)
    .map((field) => `${field.name} ${field.text}`)
    .join(", ");
  const mode = limit.mode !== undefined && limit.mode !== "enforce" ? `, ${limit.mode}` : "";
  return `${formatAlgorithm(limit.algorithm)} (${fields}${mode})`;
}

/**
 * A limit change in plain words, naming only what changed:
 * - same algorithm: `"token bucket: capacity 20 → 60, refill 10/s → 30/s"`, with mode
 *   (`"mode enforce → dry-run"`) and store-failure changes (`"if Redis fails: admit → reject"`);
 * - nothing changed: `"token bucket: unchanged (capacity 20, refill 10/s)"`;
 * - another algorithm: `"token bucket (capacity 20, refill 10/s) → fixed window (limit 100, window 1 min)"`;
 * - added or removed: `"none → token bucket (...)"`, `"token bucket (...) → none"`.
 * A missing `mode` is `enforce`; `onStoreFailure` is compared only when both sides state it.
 */
export function describeLimitChange(
  before: DescribableLimit | null,
  after: DescribableLimit | null,
): string {
  if (before === null && after === null) return "none";
  if (before === null && after !== null) return `none → ${describeLimitAlone(after)}`;
  if (before !== null && after === null) return `${describeLimitAlone(before)} → none`;
  if (before === null || after === null) return "none";
  if (before.algorithm !== after.algorithm) {
    return `${describeLimitAlone(before)} → ${describeLimitAlone(after)}`;
  }
  const oldFields = limitFields(before);
  const newFields = limitFields(after);
  const parts: string[] = [];
  newFields.forEach((field, index) => {
    const old = oldFields[index];
    if (old !== undefined && old.value !== field.value) {
      // Rounded for reading, two different numbers can look the same: then show them exactly.
      const [from, to] =
        old.text === field.text ? [String(old.value), String(field.value)] : [old.text, field.text];
      parts.push(`${field.name} ${from} → ${to}`);
    }
  });
  const oldMode = before.mode ?? "enforce";
  const newMode = after.mode ?? "enforce";
  if (oldMode !== newMode) parts.push(`mode ${oldMode} → ${newMode}`);
  if (
    before.onStoreFailure !== undefined &&
    after.onStoreFailure !== undefined &&
    before.onStoreFailure !== after.onStoreFailure
  ) {
    parts.push(
      `if Redis fails: ${STORE_FAILURE_WORDS[before.onStoreFailure]} → ${STORE_FAILURE_WORDS[after.onStoreFailure]}`,
    );
  }
  const name = formatAlgorithm(after.algorithm);
  if (parts.length === 0) {
    return `${name}: unchanged (${newFields.map((f) => `${f.name} ${f.text}`).join(", ")})`;
  }
  return `${name}: ${parts.join(", ")}`;
}
