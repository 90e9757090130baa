/**
 * What an incident does to a customer's limit, in numbers: the enforced rule it replaces (the
 * customer's override, else the tier's) and the limit it puts in place. Recorded in the incident's
 * audit entry (`effect`) when it is raised, so the entry says "10/s, bursts of 20 → 30/s, bursts
 * of 60" as it was at that moment, whatever the tier says later.
 */
import type { LimitSpec } from "@limitplane/enforcer/limiter";
import { type ResolutionTrace, resolveLimits, scaleLimit } from "@limitplane/enforcer/policy";
import type { ClockedReadDeps } from "../deps";
import { isAppError } from "../errors";
import { readCompiledSnapshot } from "../policy/get-current-snapshot";
import { incidentSelect, toIncidentRecord } from "./incident-record";

type TraceSlot = ResolutionTrace["slots"][number];

/**
 * The enforced rule an incident on `slot` replaces and a factor scales: the customer's override,
 * else the tier's. Null when the layer has no such rule.
 */
export function incidentBaseRule(slot: TraceSlot): TraceSlot["rules"][number] | null {
  return (
    [...slot.rules]
      .reverse()
      .find(
        (rule) =>
          (rule.source === "tier" || rule.source === "customer-override") &&
          rule.mode === "enforce" &&
          rule.status !== "off",
      ) ?? null
  );
}

export interface IncidentEffect {
  /** The limit the incident replaces. */
  readonly before: LimitSpec;
  /** The limit it puts in place. */
  readonly after: LimitSpec;
}

/**
 * The effect of an incident on `customerId`'s layer (`endpointClass` null: the account layer)
 * against the latest published policy. Null when there is no policy yet or nothing to replace.
 */
export async function incidentEffect(
  incident: {
    readonly customerId: string;
    readonly endpointClass: string | null;
    readonly factor: number | null;
    readonly limit: LimitSpec | null;
  },
  deps: ClockedReadDeps,
): Promise<IncidentEffect | null> {
  try {
    const [snapshot, customer] = await Promise.all([
      readCompiledSnapshot({ customerId: incident.customerId }, deps),
      deps.db.customer.findUnique({ where: { id: incident.customerId }, select: { tier: true } }),
    ]);
    const { trace } = resolveLimits(
      snapshot,
      {
        customerId: incident.customerId,
        tier: customer?.tier ?? null,
        endpointClass: incident.endpointClass,
        method: null,
        path: null,
        clientAddress: null,
      },
      deps.clock.nowMs(),
    );
    const layer = incident.endpointClass === null ? "account" : "endpoint";
    const slot = trace?.slots.find((candidate) => candidate.layer === layer);
    const base = slot === undefined ? null : incidentBaseRule(slot);
    if (base === null || base.limit === null) return null;
    const after =
      incident.limit ?? (incident.factor === null ? null : scaleLimit(base.limit, incident.factor));
    return after === null ? null : { before: base.limit, after };
  } catch (error: unknown) {
    // No policy yet, or the customer's entries unreadable: the entry goes without the numbers.
    if (isAppError(error)) return null;
    throw error;
  }
}

/**
 * The effect of the stored incident `id` (null when there is none, or nothing to replace), for the
 * audit entries of its extension, revert and expiry: the same numbers the raise states, against the
 * policy in force now. Read before the change's transaction: the fields it uses (customer, layer,
 * factor, limit) never change after the raise.
 */
export async function storedIncidentEffect(
  id: string,
  deps: ClockedReadDeps,
): Promise<IncidentEffect | null> {
  const row = await deps.db.incidentOverride.findUnique({ where: { id }, select: incidentSelect });
  return row === null ? null : incidentEffect(toIncidentRecord(row), deps);
}
