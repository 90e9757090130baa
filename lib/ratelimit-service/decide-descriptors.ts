/**
 * One `ShouldRateLimit` call, protocol aside. Each descriptor is decided one of three ways:
 * - by the limit the gateway sent with it (Envoy's `RateLimitOverride`), when the domain's
 *   mapping says `limitOverride: apply`; otherwise that limit is ignored and counted;
 * - by a descriptor rule of the policy that matches it (`DecisionEngine.checkDescriptors`);
 * - mapped onto an enforcer request (`descriptor-mapping.ts`, the policy's mapping for the domain)
 *   and decided as a gateway's request.
 * All go through the one enforcer runtime, and the outcomes become the RLS answer. The gRPC
 * handler only decodes, calls this and encodes.
 */
import type { DescriptorDecision, EnforcerRequest, EnforcerResult } from "@limitplane/enforcer";
import {
  type DescriptorEntry,
  descriptorRuleScope,
  type TDescriptorMapping,
} from "@limitplane/enforcer/policy";
import { limitOverrideOf, requestOfDescriptor } from "./descriptor-mapping";
import type { TRateLimitRequest } from "./rls-request";
import {
  buildRlsAnswer,
  type DescriptorOutcome,
  type LimitOverrideDecision,
  type RlsAnswer,
} from "./rls-response";
import type { ServiceMetrics } from "./service-metrics";

/** What decides a request: the enforcer (`Enforcer.checkNow`). */
export type CheckRequest = (request: EnforcerRequest) => EnforcerResult | Promise<EnforcerResult>;

/** What the service asks the enforcer beyond `checkNow`: the policy's rules and mapping. */
export interface DescriptorRules {
  matchDescriptors(
    domain: string,
    descriptors: readonly (readonly DescriptorEntry[])[],
  ): readonly boolean[];
  checkDescriptors(
    domain: string,
    descriptors: readonly (readonly DescriptorEntry[])[],
    cost: number,
  ): Promise<readonly DescriptorDecision[] | null>;
  /** The policy's mapping for `domain` (its own, else `*`); null: not covered. */
  descriptorMapping(domain: string): TDescriptorMapping | null;
  checkLimitOverride(
    domain: string,
    entries: readonly DescriptorEntry[],
    limit: { readonly limit: number; readonly windowMs: number },
    cost: number,
  ): Promise<LimitOverrideDecision | null>;
}

export type DescriptorsAnswer =
  | RlsAnswer
  | { readonly kind: "invalid"; readonly field: string; readonly message: string };

const NO_ENTRIES: readonly DescriptorEntry[] = [];

export interface DecideDeps {
  readonly check: CheckRequest;
  readonly rules: DescriptorRules;
  readonly metrics: ServiceMetrics;
}

/**
 * Decides every descriptor of `request`. `hits_addend` is the cost of each (0 means 1, as in
 * Envoy). Nothing is spent when any descriptor is invalid: all are mapped before any is decided.
 * Answers at once, without a promise, when the call is one mapped descriptor the enforcer decided
 * without a store call (a lease, the denial cache: most calls under load), as `checkNow` does.
 */
export function decideDescriptors(
  request: TRateLimitRequest,
  deps: DecideDeps,
): DescriptorsAnswer | Promise<DescriptorsAnswer> {
  const only = request.descriptors.length === 1 ? request.descriptors[0] : undefined;
  if (only === undefined || only.limit != null) return decideEach(request, deps);
  const { domain } = request;
  if (deps.rules.matchDescriptors(domain, [only.entries])[0] === true) {
    return decideEach(request, deps);
  }
  const mapping = deps.rules.descriptorMapping(domain);
  const cost = request.hits_addend === 0 ? 1 : request.hits_addend;
  const entry = requestOfDescriptor(mapping, only.entries, cost, "descriptors[0]");
  if (entry.kind === "invalid") return entry;
  const outcome = decideMapped(domain, mapping, entry, deps);
  return outcome instanceof Promise
    ? outcome.then((decided) => buildRlsAnswer([decided]))
    : buildRlsAnswer([outcome]);
}

/** A mapped descriptor's outcome, counted: at once when the enforcer answered at once. */
function decideMapped(
  domain: string,
  mapping: TDescriptorMapping | null,
  entry: Exclude<ReturnType<typeof requestOfDescriptor>, { kind: "invalid" }>,
  deps: DecideDeps,
): DescriptorOutcome | Promise<DescriptorOutcome> {
  if (entry.kind === "uncovered") {
    deps.metrics.uncovered.add({ domain, keys: entry.keys });
    return { kind: "uncovered" };
  }
  const rule = mapping?.domain ?? "none";
  const decided = (result: EnforcerResult): DescriptorOutcome => {
    deps.metrics.descriptors.add({
      domain,
      rule,
      code: result.decision.allowed ? "OK" : "OVER_LIMIT",
    });
    return { kind: "decided", result };
  };
  const result = deps.check(entry.request);
  return result instanceof Promise ? result.then(decided) : decided(result);
}

async function decideEach(
  request: TRateLimitRequest,
  deps: DecideDeps,
): Promise<DescriptorsAnswer> {
  const { domain, descriptors } = request;
  const { rules, metrics } = deps;
  const mapping = rules.descriptorMapping(domain);
  const cost = request.hits_addend === 0 ? 1 : request.hits_addend;
  const overrides = descriptors.map((descriptor) => {
    if (descriptor.limit == null) return null;
    const override = limitOverrideOf(mapping, descriptor.limit);
    if (override.kind === "apply") return override;
    metrics.ignoredLimitOverrides.add({ domain, reason: override.reason });
    return null;
  });
  // A descriptor decided by its own limit is matched against no rule (envoyproxy/ratelimit's
  // override wins over its config too): it is left out of the rules' view of the call.
  const entryLists = descriptors.map((descriptor, index) =>
    overrides[index] === null ? descriptor.entries : NO_ENTRIES,
  );
  const isRuled = rules.matchDescriptors(domain, entryLists);
  // Descriptors neither overridden nor ruled are mapped, and checked, before anything is spent.
  const mapped = descriptors.map((descriptor, index) =>
    overrides[index] !== null || isRuled[index] === true
      ? null
      : requestOfDescriptor(mapping, descriptor.entries, cost, `descriptors[${index}]`),
  );
  for (const entry of mapped) {
    if (entry?.kind === "invalid") return entry;
  }
  const ruled = isRuled.some(Boolean)
    ? await rules.checkDescriptors(domain, entryLists, cost)
    : null;
  const outcomes = await Promise.all(
    descriptors.map(async (descriptor, index): Promise<DescriptorOutcome> => {
      const override = overrides[index];
      if (override != null) {
        const decided = await rules.checkLimitOverride(domain, descriptor.entries, override, cost);
        if (decided === null) return { kind: "uncovered" };
        metrics.descriptors.add({
          domain,
          rule: "limit-override",
          code: decided.decision.allowed ? "OK" : "OVER_LIMIT",
        });
        return { kind: "override", decided, requested: descriptor.limit ?? null };
      }
      const byRule = ruled?.[index];
      if (byRule !== undefined && byRule.kind !== "unmatched") {
        return descriptorRuleOutcome(domain, byRule, metrics);
      }
      const entry =
        mapped[index] ??
        requestOfDescriptor(mapping, descriptor.entries, cost, `descriptors[${index}]`);
      // Refused before anything was spent when invalid; here only a rule's unmatched one.
      if (entry.kind === "invalid") return { kind: "uncovered" };
      return decideMapped(domain, mapping, entry, deps);
    }),
  );
  return buildRlsAnswer(outcomes);
}

/** The outcome of a descriptor a descriptor rule decided, counted by rule. */
function descriptorRuleOutcome(
  domain: string,
  decided: Exclude<DescriptorDecision, { kind: "unmatched" }>,
  metrics: ServiceMetrics,
): DescriptorOutcome {
  const rule = descriptorRuleScope(decided.rule.id);
  switch (decided.kind) {
    case "replaced":
      metrics.descriptors.add({ domain, rule, code: "REPLACED" });
      return { kind: "uncovered" };
    case "unlimited":
      metrics.descriptors.add({ domain, rule, code: "UNLIMITED" });
      return { kind: "unlimited" };
    case "decided": {
      const isShadowOver = decided.decision.outcomes.some(
        (outcome) => outcome.mode === "dry-run" && !outcome.allowed,
      );
      metrics.descriptors.add({
        domain,
        // detailed_metric: one series per matched value (bounded by the counter's label limit).
        rule: decided.rule.detailedMetric ? `${rule}/${decided.metricKey}` : rule,
        code: !decided.decision.allowed ? "OVER_LIMIT" : isShadowOver ? "SHADOW_OVER_LIMIT" : "OK",
      });
      return { kind: "rule", decided };
    }
    default: {
      const unknown: never = decided;
      throw new TypeError(`unknown descriptor decision ${JSON.stringify(unknown)}`);
    }
  }
}
