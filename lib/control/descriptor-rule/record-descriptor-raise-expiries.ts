import { systemActor } from "../change-context";
import type { ControlDeps } from "../deps";
import { runPolicyChange } from "../policy/run-policy-change";
import { auditView } from "../stored";
import { isChangedSinceRead, versionedWrite } from "../versioned-write";
import {
  descriptorRuleData,
  descriptorRuleEntity,
  descriptorRuleSelect,
  toDescriptorRuleRecord,
} from "./descriptor-rule-record";

export interface RecordDescriptorRaiseExpiriesOptions {
  /** Most expiries recorded per call; the worker calls again while it returns this many. @default 100 */
  readonly limit?: number;
}

/** One raise whose expiry was recorded. */
export interface RecordedRaiseExpiry {
  readonly ruleId: string;
  readonly raiseId: string;
}

/**
 * Writes a `descriptor-rule.expire-raise` audit entry, by the system actor, for each raise of one
 * descriptor value that reached its expiry, and takes the raise out of its rule in the same
 * transaction: the raise leaving the rule is the mark that its expiry was recorded, so each is
 * recorded once (raises and reverts leave past raises to this, which is what the incident expiry
 * recorder does for incidents, `record-incident-expiries.ts`, and the same worker job runs both).
 *
 * Services stop applying a raise at its expiry by their own clock; the version this publishes
 * only drops a raise they already ignore. A rule changed meanwhile (an operator's edit, another
 * recorder) is left for the next call: its version no longer matches the one read here.
 */
export async function recordDescriptorRaiseExpiries(
  deps: ControlDeps,
  options: RecordDescriptorRaiseExpiriesOptions = {},
): Promise<RecordedRaiseExpiry[]> {
  const limit = options.limit ?? 100;
  const nowMs = deps.clock.nowMs();
  // Few rules hold raises; the filter on their expiry is done here, on the parsed raises.
  const rules = await deps.db.descriptorRule.findMany({
    where: { NOT: { raises: { equals: [] } } },
    orderBy: { id: "asc" },
    select: descriptorRuleSelect,
  });
  const due = rules
    .map(toDescriptorRuleRecord)
    .flatMap((rule) =>
      rule.raises
        .filter((raise) => Date.parse(raise.expiresAt) <= nowMs)
        .map((raise) => ({ rule, raise })),
    )
    .sort(
      (a, b) =>
        Date.parse(a.raise.expiresAt) - Date.parse(b.raise.expiresAt) ||
        a.raise.id.localeCompare(b.raise.id),
    )
    .slice(0, limit);
  const recorded: RecordedRaiseExpiry[] = [];
  // Versions as last written here: a rule with two expired raises is written twice.
  const versions = new Map<string, number>();
  for (const { rule, raise } of due) {
    const value = raise.descriptor.map((level) => `${level.key}=${level.value}`).join(", ");
    try {
      const written = await runPolicyChange(
        deps,
        {
          actor: systemActor("descriptor raise expiry"),
          reason: `raise ${raise.id} of ${value} reached its expiry at ${raise.expiresAt}`,
        },
        {
          action: "descriptor-rule.expire-raise",
          entityType: "descriptor-rule",
          affectsSnapshot: true,
          focus: { collection: "descriptorRules", id: rule.id },
          write: versionedWrite(
            descriptorRuleEntity(rule.id),
            versions.get(rule.id) ?? rule.version,
            async (tx, current) => {
              const { version: _v, createdAt: _c, updatedAt: _u, ...fields } = current;
              const raises = fields.raises.filter((item) => item.id !== raise.id);
              const row = await tx.descriptorRule.update({
                where: { id: rule.id },
                data: { ...descriptorRuleData({ ...fields, raises }), version: { increment: 1 } },
                select: descriptorRuleSelect,
              });
              const updated = toDescriptorRuleRecord(row);
              return { after: auditView(updated), value: { version: updated.version } };
            },
          ),
        },
      );
      versions.set(rule.id, written.version);
      recorded.push({ ruleId: rule.id, raiseId: raise.id });
    } catch (error: unknown) {
      // Changed or deleted since it was read: the next call reads it again.
      if (isChangedSinceRead(error)) continue;
      throw error;
    }
  }
  return recorded;
}
