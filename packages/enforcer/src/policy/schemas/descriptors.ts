/**
 * Descriptor rules: limits keyed by the descriptors Envoy sends its rate limit service
 * (`generic_key=checkout`, `remote_address=...`, `database=users`), with envoyproxy/ratelimit's
 * matching (see `descriptor-rules.ts`) and any of our algorithms and durations.
 */
import { z } from "zod";
import { recordId, strict, textField } from "../schema-fields";
import { ZLimitSpec, ZOnStoreFailure, ZPolicyMode } from "./limits";
import type { AddIssue } from "./rules";
import { indexUnique } from "./rules";

/** The most entries a descriptor pattern has (the service accepts 32 per descriptor). */
export const MAX_DESCRIPTOR_PATTERN_ENTRIES = 32;
/** The most descriptor rules a policy holds. */
export const MAX_DESCRIPTOR_RULES = 10_000;

const descriptorText = (label: string, maxLength: number) => textField(label, maxLength);

/**
 * One level of a pattern: a key, and a value or null (any value). A value ending in `*` matches
 * every value starting with what precedes the `*`; a `*` anywhere else is an ordinary character.
 */
export const ZDescriptorPatternEntry = strict({
  key: descriptorText("key", 256),
  value: descriptorText("value", 1024).nullable().default(null),
});
export type TDescriptorPatternEntry = z.output<typeof ZDescriptorPatternEntry>;

/**
 * How a wildcard value (`tenant=acme-*`) counts: `per-value` gives each matching value its own
 * counter (envoyproxy/ratelimit's default), `shared` makes every matching value spend one counter.
 * Key-only levels always count per value, as in envoyproxy/ratelimit.
 */
export const ZWildcardCounter = z.enum(["per-value", "shared"], {
  error: "wildcardCounter must be one of: per-value, shared",
});

const ruleName = descriptorText("name", 256);

/**
 * What a rule does with what it matches: a limit (any algorithm and duration), `unlimited`
 * (answered OK, nothing counted: envoyproxy/ratelimit's `unlimited: true`), or `deny` (every
 * request over the limit: its `requests_per_unit: 0`).
 */
export const ZDescriptorRuleLimit = z.union([ZLimitSpec, z.enum(["unlimited", "deny"])], {
  error: 'limit must be a limit object with an algorithm field, "unlimited" or "deny"',
});
export type TDescriptorRuleLimit = z.output<typeof ZDescriptorRuleLimit>;

function descriptorRuleShape() {
  return {
    id: recordId("descriptor rule id"),
    /** The RLS `domain` the rule belongs to. */
    domain: descriptorText("domain", 256),
    /** The descriptor it matches, level by level: as many entries as the request's descriptor. */
    descriptor: z
      .array(ZDescriptorPatternEntry)
      .min(1, { error: "descriptor needs at least one entry" })
      .max(MAX_DESCRIPTOR_PATTERN_ENTRIES, {
        error: `descriptor takes at most ${MAX_DESCRIPTOR_PATTERN_ENTRIES} entries`,
      }),
    limit: ZDescriptorRuleLimit,
    /**
     * `enforce`, `dry-run` (envoyproxy/ratelimit's `shadow_mode`: counted, and counted as
     * would-reject, never rejects) or `off` (as if absent).
     */
    mode: ZPolicyMode,
    /** What the service does when Redis fails (see `ZOnStoreFailure`). */
    onStoreFailure: ZOnStoreFailure,
    /** What `replaces` of other rules refer to this one by; null: none. */
    name: ruleName.nullable(),
    /** Names of rules this one supersedes when both match one request. */
    replaces: z.array(ruleName).max(100, { error: "replaces takes at most 100 names" }),
    wildcardCounter: ZWildcardCounter,
    /** Label metrics with the matched values instead of the pattern (high cardinality). */
    detailedMetric: z.boolean({ error: "detailedMetric must be true or false" }),
  };
}

export function refineDescriptorRule(
  rule: { name: string | null; replaces: readonly string[] },
  ctx: z.RefinementCtx,
): void {
  rule.replaces.forEach((name, index) => {
    if (name === rule.name) {
      ctx.addIssue({
        code: "custom",
        path: ["replaces", index],
        message: `a rule cannot replace itself ("${name}" is its own name)`,
      });
    }
  });
}

/** A descriptor rule as written: mode, failure policy and options default. */
export const ZDescriptorRule = strict({
  ...descriptorRuleShape(),
  mode: ZPolicyMode.default("enforce"),
  onStoreFailure: ZOnStoreFailure.default("open"),
  name: ruleName.nullable().default(null),
  replaces: z.array(ruleName).max(100, { error: "replaces takes at most 100 names" }).default([]),
  wildcardCounter: ZWildcardCounter.default("per-value"),
  detailedMetric: z.boolean({ error: "detailedMetric must be true or false" }).default(false),
}).superRefine(refineDescriptorRule);
export type TDescriptorRule = z.output<typeof ZDescriptorRule>;
export type TDescriptorRuleInput = z.input<typeof ZDescriptorRule>;

/** A descriptor rule as compiled: every field explicit. */
export const ZSnapshotDescriptorRule = strict(descriptorRuleShape()).superRefine(
  refineDescriptorRule,
);
export type TSnapshotDescriptorRule = z.output<typeof ZSnapshotDescriptorRule>;

/** The identity of a rule's match: its domain and pattern. Two rules may not share one. */
export function descriptorPatternKey(rule: {
  readonly domain: string;
  readonly descriptor: readonly TDescriptorPatternEntry[];
}): string {
  return JSON.stringify([rule.domain, ...rule.descriptor.map((entry) => [entry.key, entry.value])]);
}

/** `domain` then `key=value` (or `key`) per level: how people and metrics read a pattern. */
export function formatDescriptorPattern(rule: {
  readonly domain: string;
  readonly descriptor: readonly TDescriptorPatternEntry[];
}): string {
  return `${rule.domain}: ${rule.descriptor
    .map((entry) => (entry.value === null ? entry.key : `${entry.key}=${entry.value}`))
    .join(", ")}`;
}

/** Ids and patterns are unique across a policy's descriptor rules. */
export function checkDescriptorRules(
  rules: readonly {
    readonly id: string;
    readonly domain: string;
    readonly descriptor: readonly TDescriptorPatternEntry[];
  }[],
  add: AddIssue,
): void {
  indexUnique(
    rules,
    (rule) => rule.id,
    (index, first, id) =>
      add(
        ["descriptorRules", index, "id"],
        `descriptor rule id "${id}" is already used by descriptorRules[${first}]`,
      ),
  );
  indexUnique(rules, descriptorPatternKey, (index, first) => {
    const rule = rules[index];
    add(
      ["descriptorRules", index, "descriptor"],
      `${rule === undefined ? "this pattern" : `"${formatDescriptorPattern(rule)}"`} is already matched by descriptorRules[${first}]; a domain and pattern may belong to one rule only`,
    );
  });
}
