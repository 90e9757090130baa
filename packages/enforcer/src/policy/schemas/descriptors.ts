/**
 * Descriptor rules: limits keyed by the descriptors Envoy sends its rate limit service
 * (`generic_key=checkout`, `remote_address=...`, `database=users`), with envoyproxy/ratelimit's
 * matching (see `descriptor-rules.ts`) and any of our algorithms and durations.
 */
import { z } from "zod";
import { checkIncidentGuardrails, type GuardrailSettings } from "../guardrails";
import { recordId, strict, textField, ZInstant } from "../schema-fields";
import { factorField, refineIncidentShape } from "./customers";
import { ZDurability, ZLimitSpec, ZOnStoreFailure, ZPolicyMode } from "./limits";
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

/** The most raises one rule holds (current, upcoming and past ones not yet pruned). */
export const MAX_DESCRIPTOR_RAISES = 100;

/** One level of a descriptor value a raise names: a key and its value, no wildcard meaning. */
export const ZDescriptorValueEntry = strict({
  key: descriptorText("key", 256),
  value: descriptorText("value", 1024),
});

function descriptorRaiseShape() {
  return {
    /** Stable id, unique within its rule. */
    id: recordId("raise id"),
    /**
     * The descriptor value it raises, level by level, exactly as Envoy sends it
     * (`[{ key: "tenant", value: "acme" }]`): one entry per level of the rule's pattern.
     */
    descriptor: z
      .array(ZDescriptorValueEntry)
      .min(1, { error: "descriptor needs at least one entry" })
      .max(MAX_DESCRIPTOR_PATTERN_ENTRIES, {
        error: `descriptor takes at most ${MAX_DESCRIPTOR_PATTERN_ENTRIES} entries`,
      }),
    /** Multiplies the rule's limit (size and rate). Exactly one of `factor` and `limit`. */
    factor: factorField.nullable(),
    /** An absolute limit instead of a factor. */
    limit: ZLimitSpec.nullable(),
    startsAt: ZInstant,
    /** Required: every raise ends by itself. */
    expiresAt: ZInstant,
  };
}

/**
 * A raise (or cut) of one descriptor value's limit for a while: an incident override for one value
 * of a descriptor rule ("raise `tenant=acme` for 2 hours"). It applies while
 * `startsAt <= now < expiresAt` (wall clock), on the rule's own counter for that value, so the
 * count carries on when it starts and when it ends. If several apply, the latest started wins.
 */
export const ZDescriptorRaise = strict({
  ...descriptorRaiseShape(),
  factor: factorField.nullable().default(null),
  limit: ZLimitSpec.nullable().default(null),
  /** Who is responsible for it. */
  owner: textField("owner", 200),
  reason: textField("reason", 1000),
}).superRefine(refineIncidentShape);
export type TDescriptorRaise = z.output<typeof ZDescriptorRaise>;

/** A raise as compiled: no owner or reason (enforcers need neither). */
export const ZSnapshotDescriptorRaise = strict(descriptorRaiseShape()).superRefine(
  refineIncidentShape,
);
export type TSnapshotDescriptorRaise = z.output<typeof ZSnapshotDescriptorRaise>;

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
    /**
     * `replicated`: each decision waits for a replica to acknowledge its writes before the
     * service answers OK, so a failover cannot lose them (see `ZDurability`). Absent: `async`.
     */
    durability: ZDurability.optional(),
    /** What `replaces` of other rules refer to this one by; null: none. */
    name: ruleName.nullable(),
    /** Names of rules this one supersedes when both match one request. */
    replaces: z.array(ruleName).max(100, { error: "replaces takes at most 100 names" }),
    wildcardCounter: ZWildcardCounter,
    /** Label metrics with the matched values instead of the pattern (high cardinality). */
    detailedMetric: z.boolean({ error: "detailedMetric must be true or false" }),
  };
}

const raisesMaxError = { error: `a rule takes at most ${MAX_DESCRIPTOR_RAISES} raises` };

export function refineDescriptorRule(
  rule: {
    name: string | null;
    replaces: readonly string[];
    descriptor: readonly TDescriptorPatternEntry[];
    limit: TDescriptorRuleLimit;
    wildcardCounter: "per-value" | "shared";
    raises?: readonly { readonly id: string; readonly descriptor: readonly DescriptorValue[] }[];
  },
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
  const seen = new Map<string, number>();
  (rule.raises ?? []).forEach((raise, index) => {
    const first = seen.get(raise.id);
    if (first !== undefined) {
      ctx.addIssue({
        code: "custom",
        path: ["raises", index, "id"],
        message: `raise id "${raise.id}" is already used by raises[${first}]`,
      });
    } else {
      seen.set(raise.id, index);
    }
    if (rule.limit === "unlimited") {
      ctx.addIssue({
        code: "custom",
        path: ["raises", index],
        message: "an unlimited rule has nothing to raise",
      });
    }
    const problem = raiseValueProblem(rule, raise.descriptor);
    if (problem !== null) {
      ctx.addIssue({
        code: "custom",
        path: ["raises", index, "descriptor", ...problem.path],
        message: problem.message,
      });
    }
  });
}

interface DescriptorValue {
  readonly key: string;
  readonly value: string;
}

/**
 * Why `values` is not one value the rule's pattern matches, or null when it is: one entry per
 * level, each with the level's key, and the level's value (exact, or starting with a wildcard's
 * prefix). A level of a shared wildcard counts every value together, so one of them cannot be
 * raised alone.
 */
export function raiseValueProblem(
  rule: {
    readonly descriptor: readonly TDescriptorPatternEntry[];
    readonly wildcardCounter: "per-value" | "shared";
  },
  values: readonly DescriptorValue[],
): { path: (string | number)[]; message: string } | null {
  if (values.length !== rule.descriptor.length) {
    return {
      path: [],
      message: `the rule's pattern has ${rule.descriptor.length} level(s); give one key and value for each, not ${values.length}`,
    };
  }
  for (const [index, level] of rule.descriptor.entries()) {
    const entry = values[index];
    if (entry === undefined) continue;
    if (entry.key !== level.key) {
      return { path: [index, "key"], message: `must be "${level.key}", the pattern's key here` };
    }
    if (level.value === null) continue;
    if (level.value.endsWith("*")) {
      if (!entry.value.startsWith(level.value.slice(0, -1))) {
        return {
          path: [index, "value"],
          message: `"${entry.value}" does not match the pattern's "${level.value}"`,
        };
      }
      if (rule.wildcardCounter === "shared" && entry.value !== level.value) {
        return {
          path: [index, "value"],
          message: `every value matching "${level.value}" shares one counter (wildcardCounter: shared); raise the whole rule instead`,
        };
      }
    } else if (entry.value !== level.value) {
      return { path: [index, "value"], message: `must be "${level.value}", the pattern's value` };
    }
  }
  return null;
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
  /** Raises of one descriptor value for a while (see `ZDescriptorRaise`). */
  raises: z.array(ZDescriptorRaise).max(MAX_DESCRIPTOR_RAISES, raisesMaxError).default([]),
}).superRefine(refineDescriptorRule);
export type TDescriptorRule = z.output<typeof ZDescriptorRule>;
export type TDescriptorRuleInput = z.input<typeof ZDescriptorRule>;

/**
 * A descriptor rule as compiled: every field explicit, but `raises` absent when there are none, so
 * a rule without raises compiles to the bytes it did before raises existed.
 */
export const ZSnapshotDescriptorRule = strict({
  ...descriptorRuleShape(),
  raises: z.array(ZSnapshotDescriptorRaise).max(MAX_DESCRIPTOR_RAISES, raisesMaxError).optional(),
}).superRefine(refineDescriptorRule);
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

/**
 * Ids and patterns are unique across a policy's descriptor rules; with `guardrails` (a document's),
 * every raise keeps within them as an incident override does (the rule's limit is what a factor
 * scales and what an absolute limit is compared with).
 */
export function checkDescriptorRules(
  rules: readonly {
    readonly id: string;
    readonly domain: string;
    readonly descriptor: readonly TDescriptorPatternEntry[];
    readonly limit: TDescriptorRuleLimit;
    readonly raises?: readonly {
      readonly factor: number | null;
      readonly limit: z.output<typeof ZLimitSpec> | null;
      readonly startsAt: string;
      readonly expiresAt: string;
    }[];
  }[],
  add: AddIssue,
  guardrails?: GuardrailSettings,
): void {
  if (guardrails !== undefined) {
    rules.forEach((rule, ruleIndex) => {
      const replacedLimit = typeof rule.limit === "string" ? null : rule.limit;
      (rule.raises ?? []).forEach((raise, raiseIndex) => {
        for (const error of checkIncidentGuardrails(raise, { guardrails, replacedLimit })) {
          add(["descriptorRules", ruleIndex, "raises", raiseIndex, ...error.path], error.message);
        }
      });
    });
  }
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
