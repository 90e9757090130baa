/**
 * What changed between two JSON values, field by field: used to tell an operator whose edit was
 * refused as stale what someone else changed meanwhile. Pure.
 */
import { formatFieldPath } from "@limitplane/enforcer/policy";

export interface JsonChange {
  /** `limit.capacity`, `match[1].path`; `(root)` when the values differ as a whole. */
  readonly path: string;
  /** Absent (undefined) when the field was added. */
  readonly before: unknown;
  /** Absent (undefined) when the field was removed. */
  readonly after: unknown;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * Every leaf that differs, in key order. Objects are compared key by key; arrays of equal length
 * item by item; anything else (including arrays of different lengths) as a whole.
 */
export function diffJson(before: unknown, after: unknown): JsonChange[] {
  const changes: JsonChange[] = [];
  const walk = (a: unknown, b: unknown, path: (string | number)[]) => {
    if (isRecord(a) && isRecord(b)) {
      const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])].sort();
      for (const key of keys) walk(a[key], b[key], [...path, key]);
      return;
    }
    if (Array.isArray(a) && Array.isArray(b) && a.length === b.length) {
      for (const [index, item] of a.entries()) walk(item, b[index], [...path, index]);
      return;
    }
    if (JSON.stringify(a) !== JSON.stringify(b)) {
      changes.push({ path: formatFieldPath(path), before: a, after: b });
    }
  };
  walk(before, after, []);
  return changes;
}

/** `limit.capacity 200 → 300; displayName "Pro" → (removed)`, at most `maxChanges` listed. */
export function describeChanges(changes: readonly JsonChange[], maxChanges = 5): string {
  const show = (value: unknown) => (value === undefined ? "(none)" : JSON.stringify(value));
  const listed = changes
    .slice(0, maxChanges)
    .map((change) => `${change.path} ${show(change.before)} → ${show(change.after)}`);
  const more = changes.length - listed.length;
  return more > 0 ? `${listed.join("; ")}; and ${more} more` : listed.join("; ");
}
