/**
 * Matching Envoy descriptors against descriptor rules, with envoyproxy/ratelimit's semantics:
 *
 * - A request's descriptor is matched level by level against a domain's tree of patterns. At
 *   each level the entry's key and value is tried first, then the longest wildcard value whose
 *   prefix the value starts with (`value*`), then the key alone. There is no backtracking: a
 *   level decided by key and value never falls back to the key alone deeper down.
 * - A rule applies only when its pattern has exactly as many levels as the descriptor has
 *   entries, so `(key=value), (subkey=x)` never matches a one-level rule.
 * - Every descriptor of a request is matched; the request is over the limit if any is.
 * - A rule whose mode is `off` is as if absent.
 * - `replaces`: when rules matched by one request name others (by `name`) in their `replaces`,
 *   the named rules are dropped for that request: not checked, not counted.
 *
 * Counters: each rule counts per subject, and the subject holds the domain and every level's
 * value, so a key-only level counts each value alone (`to_number=1` and `to_number=2` each get
 * the limit). A wildcard level counts per value too, unless the rule says `shared`, when its
 * pattern stands for the value and every matching value spends one counter.
 *
 * Raises: a rule's `raises` name single descriptor values (`tenant=acme`); while one is in force
 * (`startsAt <= now < expiresAt`, the latest started first) it decides that value's requests, on
 * the rule's own counter for the value ({@link DescriptorRuleIndex.activeRaise}).
 *
 * Pure: no I/O, no clock (time is a parameter).
 */
import type { LimitCheck, LimitOutcome, LimitSpec } from "../limiter/types";
import type { TSnapshotDescriptorRuleEntry } from "./entries";
import { scaleLimit } from "./limit-math";
import type { TOnStoreFailure } from "./schemas";
import type { TSnapshotDescriptorRaise } from "./schemas/descriptors";

/** One entry of a request's descriptor. */
export interface DescriptorEntry {
  readonly key: string;
  readonly value: string;
}

interface PatternNode {
  /** Children by key and value (`key\u0000value`). */
  readonly exact: Map<string, PatternNode>;
  /** Children with a wildcard value, longest prefix first. */
  readonly wildcards: {
    readonly key: string;
    readonly prefix: string;
    readonly node: PatternNode;
  }[];
  /** Children by key alone. */
  readonly keyOnly: Map<string, PatternNode>;
  rule: TSnapshotDescriptorRuleEntry | null;
}

function newNode(): PatternNode {
  return { exact: new Map(), wildcards: [], keyOnly: new Map(), rule: null };
}

/** The rule a descriptor matched, and the subject its counter lives under. */
export interface DescriptorMatch {
  readonly rule: TSnapshotDescriptorRuleEntry;
  /** The counter's subject: the domain and the values (or a shared wildcard's pattern). */
  readonly subject: string;
  /** The pattern as matched, for metrics: values the rule names, `*` for key-only levels. */
  readonly metricKey: string;
}

/** A policy's descriptor rules, indexed by domain for matching. Built once per policy version. */
export class DescriptorRuleIndex {
  readonly #domains = new Map<string, PatternNode>();
  /** Per rule with raises: its raises by the subject of the value they name, latest start first. */
  readonly #raises = new Map<
    TSnapshotDescriptorRuleEntry,
    Map<string, TSnapshotDescriptorRaise[]>
  >();
  readonly size: number;

  constructor(rules: Iterable<TSnapshotDescriptorRuleEntry>) {
    // In id order, so that which of two equal patterns wins never depends on arrival order.
    // A rule turned off is as if absent: its level is not even a step, so the key alone (or
    // a wildcard) still matches what it would have.
    const sorted = [...rules]
      .filter((rule) => rule.mode !== "off")
      .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    this.size = sorted.length;
    for (const rule of sorted) {
      let node = this.#domains.get(rule.domain);
      if (node === undefined) {
        node = newNode();
        this.#domains.set(rule.domain, node);
      }
      for (const level of rule.descriptor) node = childFor(node, level.key, level.value);
      if (node.rule === null) node.rule = rule;
      if (rule.raises !== undefined && rule.raises.length > 0) {
        const bySubject = new Map<string, TSnapshotDescriptorRaise[]>();
        for (const raise of rule.raises) {
          const subject = subjectOf(
            rule.domain,
            raise.descriptor.flatMap((entry) => [entry.key, entry.value]),
          );
          const list = bySubject.get(subject) ?? [];
          list.push(raise);
          bySubject.set(subject, list);
        }
        for (const list of bySubject.values()) {
          list.sort((a, b) => Date.parse(b.startsAt) - Date.parse(a.startsAt));
        }
        this.#raises.set(rule, bySubject);
      }
    }
  }

  /**
   * The raise in force at `nowMs` (wall clock) for the value `match` matched: the latest started
   * of those with `startsAt <= nowMs < expiresAt`; null when none is.
   */
  activeRaise(match: DescriptorMatch, nowMs: number): TSnapshotDescriptorRaise | null {
    const raises = this.#raises.get(match.rule)?.get(match.subject);
    if (raises === undefined) return null;
    for (const raise of raises) {
      if (Date.parse(raise.startsAt) <= nowMs && nowMs < Date.parse(raise.expiresAt)) return raise;
    }
    return null;
  }

  /** Whether any rule names `domain`. */
  hasDomain(domain: string): boolean {
    return this.#domains.has(domain);
  }

  /** The rule `entries` match in `domain` (see the module header), or null. */
  match(domain: string, entries: readonly DescriptorEntry[]): DescriptorMatch | null {
    let node = this.#domains.get(domain);
    if (node === undefined || entries.length === 0) return null;
    const counted: string[] = [];
    const shown: string[] = [];
    for (const entry of entries) {
      const step = stepFrom(node, entry);
      if (step === null) return null;
      node = step.node;
      counted.push(entry.key, step.kind === "wildcard" ? step.pattern : entry.value);
      shown.push(step.kind === "key" ? `${entry.key}` : `${entry.key}=${step.pattern}`);
    }
    const rule = node.rule;
    if (rule === null) return null;
    const isShared = rule.wildcardCounter === "shared";
    const subjectParts: string[] = [];
    entries.forEach((entry, index) => {
      const level = rule.descriptor[index];
      const isWildcard = level?.value?.endsWith("*") === true && level.value !== entry.value;
      subjectParts.push(entry.key, isShared && isWildcard ? (level?.value ?? "") : entry.value);
    });
    return {
      rule,
      subject: subjectOf(domain, subjectParts),
      metricKey: rule.detailedMetric
        ? entries.map((entry) => `${entry.key}=${entry.value}`).join(",")
        : shown.join(","),
    };
  }
}

/** A counter's subject: the domain and, level by level, the key and the value it counts. */
function subjectOf(domain: string, parts: readonly string[]): string {
  return `d:${JSON.stringify([domain, ...parts])}`;
}

function childFor(node: PatternNode, key: string, value: string | null): PatternNode {
  if (value === null) {
    let child = node.keyOnly.get(key);
    if (child === undefined) {
      child = newNode();
      node.keyOnly.set(key, child);
    }
    return child;
  }
  if (value.endsWith("*")) {
    const prefix = value.slice(0, -1);
    const existing = node.wildcards.find((item) => item.key === key && item.prefix === prefix);
    if (existing !== undefined) return existing.node;
    const child = newNode();
    node.wildcards.push({ key, prefix, node: child });
    node.wildcards.sort((a, b) => b.prefix.length - a.prefix.length);
    return child;
  }
  const exactKey = `${key}\u0000${value}`;
  let child = node.exact.get(exactKey);
  if (child === undefined) {
    child = newNode();
    node.exact.set(exactKey, child);
  }
  return child;
}

type Step =
  | { readonly kind: "exact" | "wildcard"; readonly node: PatternNode; readonly pattern: string }
  | { readonly kind: "key"; readonly node: PatternNode };

function stepFrom(node: PatternNode, entry: DescriptorEntry): Step | null {
  const exact = node.exact.get(`${entry.key}\u0000${entry.value}`);
  if (exact !== undefined) return { kind: "exact", node: exact, pattern: entry.value };
  for (const wildcard of node.wildcards) {
    if (wildcard.key === entry.key && entry.value.startsWith(wildcard.prefix)) {
      return { kind: "wildcard", node: wildcard.node, pattern: `${wildcard.prefix}*` };
    }
  }
  const keyOnly = node.keyOnly.get(entry.key);
  return keyOnly === undefined ? null : { kind: "key", node: keyOnly };
}

/**
 * Which of one request's matches take part, after `replaces`: a match whose rule's name some
 * other matched rule replaces is dropped (null in its place).
 */
export function applyReplaces<M extends { readonly rule: TSnapshotDescriptorRuleEntry }>(
  matches: readonly (M | null)[],
): (M | null)[] {
  const replaced = new Set<string>();
  for (const match of matches) {
    for (const name of match?.rule.replaces ?? []) replaced.add(name);
  }
  if (replaced.size === 0) return [...matches];
  return matches.map((match) =>
    match !== null && match.rule.name !== null && replaced.has(match.rule.name) ? null : match,
  );
}

/**
 * What one descriptor of a call comes to under the rules, before any counter is asked:
 * - `unmatched`: no rule (or only one turned `off`) matches it;
 * - `replaced`: its rule is replaced by another rule the same call matched (`by`);
 * - `unlimited`: its rule (or the raise in force for its value) is unlimited;
 * - `limited`: `limit` decides it on the rule's counter for `match.subject`; `deny` refuses all.
 */
export type DescriptorRuling =
  | { readonly kind: "unmatched" }
  | {
      readonly kind: "replaced";
      readonly match: DescriptorMatch;
      readonly by: readonly TSnapshotDescriptorRuleEntry[];
    }
  | {
      readonly kind: "unlimited";
      readonly match: DescriptorMatch;
      readonly raise: TSnapshotDescriptorRaise | null;
    }
  | {
      readonly kind: "limited";
      readonly match: DescriptorMatch;
      readonly raise: TSnapshotDescriptorRaise | null;
      readonly limit: LimitSpec | "deny";
    };

/**
 * Rules every descriptor of one call at `wallNowMs`: each is matched, `replaces` is applied
 * across the call, and the raise in force for each matched value picks its limit. The one place
 * the rate-limit service and explain learn which rule decides a descriptor, and with what limit.
 */
export function ruleDescriptors(
  index: DescriptorRuleIndex,
  domain: string,
  descriptors: readonly (readonly DescriptorEntry[])[],
  wallNowMs: number,
): DescriptorRuling[] {
  if (!index.hasDomain(domain)) return descriptors.map(() => ({ kind: "unmatched" }));
  const matches = descriptors.map((entries) => {
    const match = index.match(domain, entries);
    // A rule turned off is as if absent.
    return match !== null && match.rule.mode === "off" ? null : match;
  });
  const kept = applyReplaces(matches);
  return matches.map((match, position): DescriptorRuling => {
    if (match === null) return { kind: "unmatched" };
    if (kept[position] === null) {
      const name = match.rule.name;
      const by = matches.flatMap((other) =>
        other !== null && name !== null && other.rule.replaces.includes(name) ? [other.rule] : [],
      );
      return { kind: "replaced", match, by };
    }
    const raise = index.activeRaise(match, wallNowMs);
    const limit = descriptorLimitOf(match.rule, raise);
    return limit === "unlimited"
      ? { kind: "unlimited", match, raise }
      : { kind: "limited", match, raise, limit };
  });
}

/**
 * The limit a matched descriptor rule applies to the value it matched: the raise in force for
 * that value (its absolute limit, or the rule's limit scaled by its factor), else the rule's.
 */
function descriptorLimitOf(
  rule: TSnapshotDescriptorRuleEntry,
  raise: TSnapshotDescriptorRaise | null,
): TSnapshotDescriptorRuleEntry["limit"] {
  if (raise === null) return rule.limit;
  if (raise.limit !== null) return raise.limit;
  // A factor scales a limit; "deny" and "unlimited" have nothing to scale (the document refuses
  // such a raise, so this only guards a hand-made snapshot).
  return typeof rule.limit === "string" ? rule.limit : scaleLimit(rule.limit, raise.factor ?? 1);
}

/** A descriptor rule's check: the limiter's check plus its failure policy. */
export interface DescriptorCheck extends LimitCheck {
  readonly bucket: string;
  readonly onStoreFailure: TOnStoreFailure;
}

/** What a `deny` check says it is: a limit no request fits (never sent to a store). */
export const DENY_LIMIT: LimitSpec = Object.freeze({
  algorithm: "fixed-window",
  limit: 1,
  windowMs: 1_000,
});

/**
 * A `deny` rule's answer, made without the store: every request is over (a would-reject in
 * dry-run), `cost-exceeds-capacity` since waiting never helps.
 */
export function denyOutcomeOf(check: LimitCheck): LimitOutcome {
  return {
    allowed: false,
    limit: 0,
    remaining: 0,
    retryAfterMs: 0,
    resetAfterMs: 0,
    reason: "cost-exceeds-capacity",
    scope: check.scope,
    mode: check.mode,
  };
}

/**
 * The check a descriptor rule makes with `limit` on its own counter, scope `descriptor:<id>`. A
 * `deny` is answered without the store; its check only names the scope. A dry-run rule never
 * rejects, so it fails open.
 */
export function descriptorCheckOf(
  rule: TSnapshotDescriptorRuleEntry,
  limit: LimitSpec | "deny",
): DescriptorCheck {
  const scope = descriptorRuleScope(rule.id);
  const spec = limit === "deny" ? DENY_LIMIT : limit;
  return rule.mode === "dry-run"
    ? { scope, bucket: scope, limit: spec, mode: "dry-run", onStoreFailure: "open" }
    : {
        scope,
        bucket: scope,
        limit: spec,
        mode: "enforce",
        onStoreFailure: rule.onStoreFailure,
        ...(rule.durability === "replicated" ? { durability: "replicated" as const } : {}),
      };
}

/** The scope a descriptor rule's decisions are counted and charted under. */
export function descriptorRuleScope(id: string): string {
  return `descriptor:${id}`;
}

/** The empty index: a policy without descriptor rules. */
export const NO_DESCRIPTOR_RULES = new DescriptorRuleIndex([]);
