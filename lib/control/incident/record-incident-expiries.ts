import { systemActor } from "../change-context";
import type { ControlDeps } from "../deps";
import { runPolicyChange } from "../policy/run-policy-change";
import { auditView } from "../stored";
import { storedIncidentEffect } from "./incident-effect";
import { incidentSelect, toIncidentRecord } from "./incident-record";

export interface RecordIncidentExpiriesOptions {
  /** Most expiries recorded per call; the worker calls again while it returns this many. @default 100 */
  readonly limit?: number;
}

/** Another recorder got there first; nothing to write. */
class AlreadyRecorded extends Error {}

/**
 * Writes an `incident.expire` audit entry, by the system actor, for each incident override that
 * has reached its expiry and was not reverted, once (`expiryRecordedAt` marks it). Enforcers stop
 * applying an incident at its expiry by their own clock, so this changes nothing they see and
 * publishes no version: it is the history operators read. Returns the ids recorded, oldest expiry
 * first.
 */
export async function recordIncidentExpiries(
  deps: ControlDeps,
  options: RecordIncidentExpiriesOptions = {},
): Promise<string[]> {
  const due = await deps.db.incidentOverride.findMany({
    where: {
      expiryRecordedAt: null,
      revokedAt: null,
      expiresAt: { lte: new Date(deps.clock.nowMs()) },
    },
    orderBy: [{ expiresAt: "asc" }, { id: "asc" }],
    take: options.limit ?? 100,
    select: { id: true, expiresAt: true },
  });
  const recorded: string[] = [];
  for (const { id, expiresAt } of due) {
    const effect = await storedIncidentEffect(id, deps);
    try {
      await runPolicyChange(
        deps,
        {
          actor: systemActor("incident expiry"),
          reason: `reached its expiry at ${expiresAt.toISOString()}`,
        },
        {
          action: "incident.expire",
          entityType: "incident",
          affectsSnapshot: false,
          touches: "customer",
          focus: null,
          async write(tx, nowMs) {
            const now = new Date(nowMs);
            const before = await tx.incidentOverride.findUniqueOrThrow({
              where: { id },
              select: incidentSelect,
            });
            // The guard and the write are one statement: a second recorder updates nothing.
            const { count } = await tx.incidentOverride.updateMany({
              where: { id, expiryRecordedAt: null, revokedAt: null, expiresAt: { lte: now } },
              data: { expiryRecordedAt: now, version: { increment: 1 } },
            });
            if (count === 0) throw new AlreadyRecorded();
            const after = toIncidentRecord(
              await tx.incidentOverride.findUniqueOrThrow({
                where: { id },
                select: incidentSelect,
              }),
            );
            return {
              entityId: id,
              customerId: after.customerId,
              before: auditView(toIncidentRecord(before)),
              after: { ...auditView(after), effect },
              value: {},
            };
          },
        },
      );
      recorded.push(id);
    } catch (error: unknown) {
      if (!(error instanceof AlreadyRecorded)) throw error;
    }
  }
  return recorded;
}
