/**
 * Where an operator changes the limit a scope names, and what that page is called: the overview's
 * anonymous rows link there, since traffic without a customer can only be helped (or held) by
 * changing the limit itself. Pure: the scope grammar is @limitplane/enforcer/policy's.
 */
import { parseScope } from "@limitplane/enforcer/policy";

export interface LimitPage {
  readonly href: string;
  /** What the link says: "the per-address ceiling", "endpoint class search's anonymous limit". */
  readonly words: string;
  /** A dry-run candidate may target the rule (tiers, ceilings, anonymous limits). */
  readonly isDryRunTarget: boolean;
}

/** The page of the rule `scope` names; null for a scope with no page (or not a scope). */
export function limitPageOf(scope: string): LimitPage | null {
  const parsed = parseScope(scope);
  if (parsed === null) return null;
  const endpointClassPage = (name: string) =>
    `/policies/endpoint-classes/${encodeURIComponent(name)}`;
  switch (parsed.kind) {
    case "address":
      return parsed.endpointClass === null
        ? { href: "/policies/settings", words: "the per-address ceiling", isDryRunTarget: true }
        : {
            href: endpointClassPage(parsed.endpointClass),
            words: `endpoint class ${parsed.endpointClass}'s anonymous limit`,
            isDryRunTarget: true,
          };
    case "ceiling":
      return parsed.endpointClass === null
        ? { href: "/policies/settings", words: "the per-customer ceiling", isDryRunTarget: true }
        : {
            href: endpointClassPage(parsed.endpointClass),
            words: `endpoint class ${parsed.endpointClass}'s ceiling`,
            isDryRunTarget: true,
          };
    case "tier":
      return parsed.endpointClass === null
        ? {
            href: `/policies/tiers/${encodeURIComponent(parsed.tier)}`,
            words: `tier ${parsed.tier}`,
            isDryRunTarget: true,
          }
        : {
            href: endpointClassPage(parsed.endpointClass),
            words: `tier ${parsed.tier} on endpoint class ${parsed.endpointClass}`,
            isDryRunTarget: true,
          };
    case "customer":
      return {
        href: `/customers/${encodeURIComponent(parsed.customerId)}`,
        words: `customer ${parsed.customerId}'s override`,
        isDryRunTarget: false,
      };
    case "incident":
      return {
        href: `/incidents/${encodeURIComponent(parsed.incidentId)}`,
        words: `incident ${parsed.incidentId}`,
        isDryRunTarget: false,
      };
    case "candidate":
      return {
        href: `/dry-run/${encodeURIComponent(parsed.candidateId)}`,
        words: `candidate ${parsed.candidateId}`,
        isDryRunTarget: false,
      };
    default: {
      const unknown: never = parsed;
      throw new Error(`unknown scope kind ${JSON.stringify(unknown)}`);
    }
  }
}
