/**
 * One `ShouldRateLimit` call, protocol aside: the parsed request's descriptors mapped onto
 * enforcer requests, decided by the one enforcer runtime, and turned into the RLS answer. The
 * gRPC handler only decodes, calls this and encodes.
 */
import type { EnforcerRequest, EnforcerResult } from "@limitplane/enforcer";
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
    readonly metrics: ServiceMetrics;
  },
): Promise<DescriptorsAnswer> {
  const domainMapping = domainMappingOf(deps.mapping, request.domain);
  const cost = request.hits_addend === 0 ? 1 : request.hits_addend;
  const mapped = request.descriptors.map((descriptor, index) =>
    requestOfDescriptor(domainMapping, descriptor.entries, cost, `descriptors[${index}]`),
  );
  for (const entry of mapped) {
    if (entry.kind === "invalid") return entry;
  }
  const domain = request.domain;
  const rule = domainMapping?.domain ?? "none";
  const outcomes = await Promise.all(
    mapped.map(async (entry, index): Promise<DescriptorOutcome> => {
      if (request.descriptors[index]?.limit != null) {
        deps.metrics.ignoredLimitOverrides.add({ domain });
      }
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
