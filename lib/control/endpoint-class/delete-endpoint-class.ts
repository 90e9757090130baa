import { parseScope, ZEndpointClass } from "@limitplane/enforcer/policy";
import { z } from "zod";
import { type ChangeContext, parseChange, ZExpectedVersion } from "../change-context";
import type { ControlDeps } from "../deps";
import { AppError } from "../errors";
import { type ChangeReceipt, runPolicyChange, type Tx } from "../policy/run-policy-change";
import { currentIncidentWhere } from "../policy/stored-policy";
import { versionedWrite } from "../versioned-write";
import {
  type EndpointClassRecord,
  endpointClassEntity,
  endpointClassLabel,
} from "./endpoint-class-record";

export const ZDeleteEndpointClassOptions = z.strictObject({
  name: ZEndpointClass.shape.name,
  expectedVersion: ZExpectedVersion,
});
export type DeleteEndpointClassOptions = z.input<typeof ZDeleteEndpointClassOptions>;

const NAMED = 3;

/**
 * Deletes an endpoint class nothing refers to: not the default class, and no customer override,
 * current incident or dry-run candidate on it (expired incidents are history and do not count).
 */
export async function deleteEndpointClass(
  options: DeleteEndpointClassOptions,
  context: ChangeContext,
  deps: ControlDeps,
): Promise<{ readonly endpointClass: EndpointClassRecord } & ChangeReceipt> {
  const { input, ctx } = parseChange(ZDeleteEndpointClassOptions, options, context);
  return runPolicyChange(deps, ctx, {
    action: "endpoint-class.delete",
    entityType: "endpoint-class",
    affectsSnapshot: true,
    focus: null,
    write: versionedWrite(
      endpointClassEntity(input.name),
      input.expectedVersion,
      async (tx, current, nowMs) => {
        const referrers = await findEndpointClassReferrers(tx, input.name, nowMs);
        if (referrers.length > 0) {
          throw new AppError(
            "CONFLICT",
            `${endpointClassLabel(input.name)} is still used by ${referrers.join(", ")}; change or remove those first.`,
            { details: { referrers } },
          );
        }
        await tx.endpointClass.delete({ where: { name: input.name }, select: { name: true } });
        return { after: null, value: { endpointClass: current } };
      },
    ),
  });
}

function named(noun: string, keys: readonly string[], count: number): string {
  const list = keys.map((key) => `"${key}"`).join(", ");
  return count <= keys.length
    ? `${noun} ${list}`
    : `${count} ${noun} (${list} and ${count - keys.length} more)`;
}

/** What refers to the class, in words: the deletion is refused while any does (and its preview names them). */
export async function findEndpointClassReferrers(
  tx: Tx,
  name: string,
  nowMs: number,
): Promise<string[]> {
  const incidentWhere = { ...currentIncidentWhere(nowMs), endpointClass: name };
  const [settings, overrides, overrideCount, incidents, incidentCount, candidates] =
    await Promise.all([
      tx.policySettings.findUnique({ where: { id: 1 }, select: { defaultEndpointClass: true } }),
      tx.customerOverride.findMany({
        where: { endpointClass: name },
        orderBy: { scope: "asc" },
        take: NAMED,
        select: { scope: true },
      }),
      tx.customerOverride.count({ where: { endpointClass: name } }),
      tx.incidentOverride.findMany({
        where: incidentWhere,
        orderBy: { id: "asc" },
        take: NAMED,
        select: { id: true },
      }),
      tx.incidentOverride.count({ where: incidentWhere }),
      tx.dryRunCandidate.findMany({ orderBy: { id: "asc" }, select: { id: true, target: true } }),
    ]);
  const referrers: string[] = [];
  if (settings?.defaultEndpointClass === name) {
    referrers.push("the settings (defaultEndpointClass)");
  }
  if (overrideCount > 0) {
    referrers.push(
      named(
        "customer overrides",
        overrides.map((override) => override.scope),
        overrideCount,
      ),
    );
  }
  if (incidentCount > 0) {
    referrers.push(
      named(
        "incidents",
        incidents.map((incident) => incident.id),
        incidentCount,
      ),
    );
  }
  for (const candidate of candidates) {
    const scope = parseScope(candidate.target);
    if (scope !== null && "endpointClass" in scope && scope.endpointClass === name) {
      referrers.push(`dry-run candidate "${candidate.id}" (target ${candidate.target})`);
    }
  }
  return referrers;
}
