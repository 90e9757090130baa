/**
 * One `ShouldRateLimit` call, protocol aside: the descriptors a descriptor rule of the policy
 * matches are decided by those rules (`DecisionEngine.checkDescriptors`); the others are mapped
 * onto enforcer requests (`descriptor-mapping.ts`) and decided as a gateway's requests. Both go
 * through the one enforcer runtime, and the outcomes become the RLS answer. The gRPC handler only
 * decodes, calls this and encodes.
 */
import type { DescriptorDecision, EnforcerRequest, EnforcerResult } from "@limitplane/enforcer";
import type { DescriptorEntry } from "@limitplane/enforcer/policy";
import {
  domainMappingOf,
  requestOfDescriptor,
  type TDescriptorMapping,
} from "./descriptor-mapping";
import type { TRateLimitRequest } from "./rls-request";
import { buildRlsAnswer, type DescriptorOutcome, type RlsAnswer } from "./rls-response";
import type { ServiceMetrics } from "./service-metrics";

/** What decides a request: the enforcer (`Enforcer.checkNow`). */
export type CheckRequest = (request: EnforcerRequest) => EnforcerResult | Promise<EnforcerResult>;

/** What decides descriptors by the policy's descriptor rules (the enforcer's two methods). */
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
}

export type DescriptorsAnswer =
  | RlsAnswer
  | { readonly kind: "invalid"; readonly field: string; readonly message: string };

/**
 * Decides every descriptor of `request`. `hits_addend` is the cost of each (0 means 1, as in
 * Envoy). Nothing is spent when any descriptor is invalid: all are mapped before any is decided.
 */
export async function decideDescriptors(
  request: TRateLimitRequest,
  deps: {
    readonly mapping: TDescriptorMapping;
    readonly check: CheckRequest;
    readonly rules: DescriptorRules;
    readonly metrics: ServiceMetrics;
  },
): Promise<DescriptorsAnswer> {
  const domain = request.domain;
  const domainMapping = domainMappingOf(deps.mapping, domain);
  const cost = request.hits_addend === 0 ? 1 : request.hits_addend;
  const entryLists = request.descriptors.map((descriptor) => descriptor.entries);
  const isRuled = deps.rules.matchDescriptors(domain, entryLists);
  // Descriptors no rule matches are mapped, and checked, before anything is spent.
  const mapped = request.descriptors.map((descriptor, index) =>
    isRuled[index] === true
      ? null
      : requestOfDescriptor(domainMapping, descriptor.entries, cost, `descriptors[${index}]`),
  );
  for (const entry of mapped) {
    if (entry?.kind === "invalid") return entry;
  }
  const ruled = isRuled.some(Boolean)
    ? await deps.rules.checkDescriptors(domain, entryLists, cost)
    : null;
  const rule = domainMapping?.domain ?? "none";
  const outcomes = await Promise.all(
    mapped.map(async (mappedEntry, index): Promise<DescriptorOutcome> => {
      if (request.descriptors[index]?.limit != null) {
        deps.metrics.ignoredLimitOverrides.add({ domain });
      }
      const byRule = ruled?.[index];
      if (byRule !== undefined && byRule.kind !== "unmatched") {
        return descriptorRuleOutcome(domain, byRule, deps.metrics);
      }
      const entry =
        mappedEntry ??
        requestOfDescriptor(domainMapping, entryLists[index] ?? [], cost, `descriptors[${index}]`);
      if (entry.kind !== "request") {
        const keys = entry.kind === "uncovered" ? entry.keys : "";
        deps.metrics.uncovered.add({ domain, keys });
        return { kind: "uncovered" };
      }
      const result = await deps.check(entry.request);
      deps.metrics.descriptors.add({
        domain,
        rule,
        code: result.decision.allowed ? "OK" : "OVER_LIMIT",
      });
      return { kind: "decided", result };
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
  const rule = `descriptor:${decided.rule.id}`;
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
