/**
 * What an incident override can replace for one customer, per layer: the limit in force now and
 * the enforced rule an incident scales (the customer's override, else the tier's), read from the
 * resolution trace. Pure: the page passes explanations it already has.
 */

import type { LimitSpec } from "@limitplane/enforcer/limiter";
import type { ResolutionTrace } from "@limitplane/enforcer/policy";
import { incidentBaseRule } from "@/lib/control";

export { incidentBaseRule };

/** What these functions read of an explanation: its trace. */
export interface Traced {
  readonly trace: ResolutionTrace;
}

export interface IncidentScopeOption {
  /** `account`, or the endpoint class's name. */
  readonly value: string;
  readonly label: string;
  /** Null for the account layer (all endpoints). */
  readonly endpointClass: string | null;
  /** What applies on this layer now (an incident's limit while one is active); null: no limit. */
  readonly current: LimitSpec | null;
  /** What a new incident would replace and a factor scales; null: nothing to scale. */
  readonly base: LimitSpec | null;
  /** A current incident on this layer: a new one would overlap it (extend that one instead). */
  readonly activeIncidentId: string | null;
}

type Layer = "account" | "endpoint";

function layerLimits(explanation: Traced, layer: Layer) {
  const slot = explanation.trace.slots.find((candidate) => candidate.layer === layer);
  if (slot === undefined) return { current: null, base: null };
  const applying = slot.rules.find((rule) => rule.status === "applies");
  return { current: applying?.limit ?? null, base: incidentBaseRule(slot)?.limit ?? null };
}

export function incidentScopeOptions(
  classes: readonly { readonly name: string; readonly displayName: string | null }[],
  explanations: ReadonlyMap<string, Traced>,
  activeIncidents: readonly { readonly id: string; readonly endpointClass: string | null }[],
): IncidentScopeOption[] {
  const activeOn = (endpointClass: string | null) =>
    activeIncidents.find((incident) => incident.endpointClass === endpointClass)?.id ?? null;
  const options: IncidentScopeOption[] = [];
  const any = explanations.values().next().value;
  if (any !== undefined) {
    options.push({
      value: "account",
      label: "All endpoints (account)",
      endpointClass: null,
      ...layerLimits(any, "account"),
      activeIncidentId: activeOn(null),
    });
  }
  for (const endpointClass of classes) {
    const explanation = explanations.get(endpointClass.name);
    if (explanation === undefined) continue;
    options.push({
      value: endpointClass.name,
      label:
        endpointClass.displayName === null
          ? endpointClass.name
          : `${endpointClass.name} (${endpointClass.displayName})`,
      endpointClass: endpointClass.name,
      ...layerLimits(explanation, "endpoint"),
      activeIncidentId: activeOn(endpointClass.name),
    });
  }
  return options;
}

/**
 * The layer that rejected the customer most recently, as a scope option value: `account`, or the
 * endpoint class whose endpoint rule rejected. Ceilings cannot be raised by an incident: null.
 */
export function scopeOfRejection(
  rejection: { readonly scope: string; readonly endpointClass: string | null } | undefined,
  explanations: ReadonlyMap<string, Traced>,
): string | null {
  if (rejection === undefined || rejection.endpointClass === null) return null;
  const explanation = explanations.get(rejection.endpointClass);
  const slot = explanation?.trace.slots.find((candidate) =>
    candidate.rules.some((rule) => rule.scope === rejection.scope && rule.status === "applies"),
  );
  if (slot === undefined) return null;
  if (slot.layer === "account") return "account";
  if (slot.layer === "endpoint") return rejection.endpointClass;
  return null;
}
