/** The cross-field rules shared by the policy document and the compiled snapshot. */
import type { z } from "zod";
import type { PolicyFieldError } from "../errors";
import { parsePathPattern, pathPatternKey } from "../path-pattern";
import { parseScope } from "../scope";

// ---------------------------------------------------------------------------------------------
// Cross-field rules shared by the document and the snapshot

/** What the document and the compiled snapshot have in common, for shared cross-field rules. */
export interface PolicyCore {
  readonly defaultTier: string;
  readonly defaultEndpointClass: string;
  readonly tiers: readonly { readonly name: string }[];
  readonly endpointClasses: readonly {
    readonly name: string;
    readonly match: readonly { readonly method: string; readonly path: string }[];
    readonly limits: Readonly<Record<string, unknown>>;
  }[];
  readonly customerOverrides: readonly {
    readonly customerId: string;
    readonly endpointClass: string | null;
  }[];
  readonly incidentOverrides: readonly {
    readonly id: string;
    readonly endpointClass: string | null;
  }[];
  readonly dryRunCandidates: readonly {
    readonly id: string;
    readonly target: string;
    readonly sliceBasisPoints?: number | undefined;
  }[];
}

/**
 * Most staged changes (candidates with a slice) in one policy: resolution keeps one shared result
 * per tier, class and pattern of slice membership, 2^k patterns for k staged changes.
 */
export const MAX_STAGED_CANDIDATES = 4;

export type AddIssue = (path: (string | number)[], message: string) => void;

export function issueAdder(ctx: z.RefinementCtx): AddIssue {
  return (path, message) => ctx.addIssue({ code: "custom", path, message });
}

/** Index of the first item per key; reports every later duplicate. */
export function indexUnique<T>(
  items: readonly T[],
  keyOf: (item: T) => string,
  onDuplicate: (index: number, firstIndex: number, key: string) => void,
): Map<string, number> {
  const seen = new Map<string, number>();
  items.forEach((item, index) => {
    const key = keyOf(item);
    const first = seen.get(key);
    if (first === undefined) seen.set(key, index);
    else onDuplicate(index, first, key);
  });
  return seen;
}

/**
 * The cross-field rules a compiled policy must meet (references, duplicates, one class per method
 * and pattern), as field errors: what the snapshot schema checks, for a policy held as entries.
 */
export function checkSnapshotPolicyCore(policy: PolicyCore): PolicyFieldError[] {
  const errors: PolicyFieldError[] = [];
  checkPolicyCore(policy, (path, message) => errors.push({ path, message }));
  return errors;
}

export function checkPolicyCore(policy: PolicyCore, add: AddIssue): void {
  const tiers = indexUnique(
    policy.tiers,
    (tier) => tier.name,
    (index, first, name) =>
      add(["tiers", index, "name"], `tier "${name}" is already defined at tiers[${first}]`),
  );
  const classes = indexUnique(
    policy.endpointClasses,
    (endpointClass) => endpointClass.name,
    (index, first, name) =>
      add(
        ["endpointClasses", index, "name"],
        `endpoint class "${name}" is already defined at endpointClasses[${first}]`,
      ),
  );
  const tierExists = (name: string) => tiers.has(name);
  const classExists = (name: string) => classes.has(name);
  /** An endpoint class a rule names (null: all endpoints) must be defined. */
  const requireClass = (path: (string | number)[], name: string | null) => {
    if (name !== null && !classExists(name)) add(path, `there is no endpoint class "${name}"`);
  };

  if (!tierExists(policy.defaultTier)) {
    add(["defaultTier"], `defaultTier names tier "${policy.defaultTier}", which is not defined`);
  }
  if (!classExists(policy.defaultEndpointClass)) {
    add(
      ["defaultEndpointClass"],
      `defaultEndpointClass names endpoint class "${policy.defaultEndpointClass}", which is not defined`,
    );
  }

  const rules = new Map<string, { classIndex: number; ruleIndex: number; name: string }>();
  policy.endpointClasses.forEach((endpointClass, classIndex) => {
    for (const tier of Object.keys(endpointClass.limits)) {
      if (!tierExists(tier)) {
        add(
          ["endpointClasses", classIndex, "limits", tier],
          `there is no tier "${tier}"; define it under tiers or remove this limit`,
        );
      }
    }
    endpointClass.match.forEach((rule, ruleIndex) => {
      const parsed = parsePathPattern(rule.path);
      if (!parsed.ok) return;
      const key = `${rule.method} ${pathPatternKey(parsed.pattern)}`;
      const first = rules.get(key);
      if (first === undefined) {
        rules.set(key, { classIndex, ruleIndex, name: endpointClass.name });
      } else {
        add(
          ["endpointClasses", classIndex, "match", ruleIndex],
          `${key} is already matched by endpoint class "${first.name}" (endpointClasses[${first.classIndex}].match[${first.ruleIndex}]); a method and path pattern may belong to one class only`,
        );
      }
    });
  });

  indexUnique(
    policy.customerOverrides,
    (override) => `${override.customerId} ${override.endpointClass ?? ""}`,
    (index, first) =>
      add(
        ["customerOverrides", index],
        `customerOverrides[${first}] already overrides this customer for the same scope; edit that one instead`,
      ),
  );
  policy.customerOverrides.forEach((override, index) => {
    requireClass(["customerOverrides", index, "endpointClass"], override.endpointClass);
  });

  indexUnique(
    policy.incidentOverrides,
    (incident) => incident.id,
    (index, first, id) =>
      add(
        ["incidentOverrides", index, "id"],
        `incident id "${id}" is already used by incidentOverrides[${first}]`,
      ),
  );
  policy.incidentOverrides.forEach((incident, index) => {
    requireClass(["incidentOverrides", index, "endpointClass"], incident.endpointClass);
  });

  indexUnique(
    policy.dryRunCandidates,
    (candidate) => candidate.id,
    (index, first, id) =>
      add(
        ["dryRunCandidates", index, "id"],
        `candidate id "${id}" is already used by dryRunCandidates[${first}]`,
      ),
  );
  policy.dryRunCandidates.forEach((candidate, index) => {
    const scope = parseScope(candidate.target);
    if (scope === null) return;
    if (scope.kind === "tier" && !tierExists(scope.tier)) {
      add(["dryRunCandidates", index, "target"], `there is no tier "${scope.tier}"`);
    }
    if ("endpointClass" in scope) {
      requireClass(["dryRunCandidates", index, "target"], scope.endpointClass);
    }
  });
  const staged = policy.dryRunCandidates
    .map((candidate, index) => ({ candidate, index }))
    .filter(({ candidate }) => candidate.sliceBasisPoints !== undefined);
  if (staged.length > MAX_STAGED_CANDIDATES) {
    add(
      ["dryRunCandidates"],
      `a policy takes at most ${MAX_STAGED_CANDIDATES} staged changes at a time, got ${staged.length}`,
    );
  }
  indexUnique(
    staged,
    ({ candidate }) => candidate.target,
    (index, first, target) => {
      const at = staged[index]?.index ?? index;
      const firstAt = staged[first]?.index ?? first;
      add(
        ["dryRunCandidates", at, "target"],
        `${target} already has a staged change (dryRunCandidates[${firstAt}]); one staged change per rule at a time`,
      );
    },
  );
}
