import {
  ON_STORE_FAILURE_DEFAULTS,
  parseScope,
  type TLimitSpec,
  type TOnStoreFailure,
  type TPolicyLimit,
  ZDryRunCandidate,
} from "@limitplane/enforcer/policy";
import { z } from "zod";
import type { Prisma } from "@/lib/generated/prisma/client";
import type { AuditEntityType } from "../audit/audit-actions";
import { type ChangeContext, parseChange, ZExpectedVersion } from "../change-context";
import type { ControlDeps } from "../deps";
import {
  endpointClassSelect,
  findEndpointClass,
  toEndpointClassRecord,
} from "../endpoint-class/endpoint-class-record";
import { type ChangeReceipt, runPolicyChange, type Tx } from "../policy/run-policy-change";
import { findSettings, settingsSelect, toSettingsRecord } from "../settings/settings-record";
import { auditView, jsonColumn, toJson } from "../stored";
import { findTier, tierSelect, toTierRecord } from "../tier/tier-record";
import { versionedWrite } from "../versioned-write";
import { assertNotStaged, type CandidateRecord, candidateEntity } from "./candidate-record";

export const ZPromoteCandidateOptions = z.strictObject({
  id: ZDryRunCandidate.shape.id,
  expectedVersion: ZExpectedVersion,
});
export type PromoteCandidateOptions = z.input<typeof ZPromoteCandidateOptions>;

/** The rule a promotion replaced, as its entity's audit entries show it. */
interface PromotedRule {
  readonly entityType: AuditEntityType;
  readonly entityId: string;
  readonly before: object;
  readonly after: object;
}

function enforced(limit: TLimitSpec, onStoreFailure: TOnStoreFailure): TPolicyLimit {
  return { ...limit, mode: "enforce", onStoreFailure };
}

/**
 * Makes a dry-run candidate's limit the enforced rule it targets (a tier's limit, a tier's limit
 * on an endpoint class, a ceiling or an anonymous limit) and removes the candidate. The rule keeps
 * its failure policy (a new per-tier endpoint limit gets the default). The audit entry is recorded
 * on the rule's entity (tier, endpoint class or settings), so its history shows the change, with
 * the candidate under `after.promotedCandidate`.
 */
export async function promoteCandidate(
  options: PromoteCandidateOptions,
  context: ChangeContext,
  deps: ControlDeps,
): Promise<{ readonly candidate: CandidateRecord } & ChangeReceipt> {
  const { input, ctx } = parseChange(ZPromoteCandidateOptions, options, context);
  return runPolicyChange(deps, ctx, {
    action: "candidate.promote",
    entityType: "candidate",
    affectsSnapshot: true,
    focus: null,
    write: versionedWrite(
      candidateEntity(input.id),
      input.expectedVersion,
      async (tx, candidate) => {
        assertNotStaged(candidate);
        const rule = await replaceTargetRule(tx, candidate);
        await tx.dryRunCandidate.delete({ where: { id: input.id }, select: { id: true } });
        return {
          recordedOn: { entityType: rule.entityType, entityId: rule.entityId, before: rule.before },
          after: { ...rule.after, promotedCandidate: auditView(candidate) },
          value: { candidate },
        };
      },
    ),
  });
}

/** Makes `candidate.limit` the enforced rule its target names; what a promotion and a completed staged change do. */
export async function replaceTargetRule(tx: Tx, candidate: CandidateRecord): Promise<PromotedRule> {
  const scope = parseScope(candidate.target);
  if (scope === null) throw new Error(`stored candidate target ${candidate.target} is not a scope`);
  const limit = candidate.limit;
  if (scope.kind === "tier" && scope.endpointClass === null) {
    const tier = await findTier(tx, scope.tier);
    const row = await tx.tier.update({
      where: { name: tier.name },
      data: {
        limit: toJson(enforced(limit, tier.limit.onStoreFailure)),
        version: { increment: 1 },
      },
      select: tierSelect,
    });
    return {
      entityType: "tier",
      entityId: tier.name,
      before: auditView(tier),
      after: auditView(toTierRecord(row)),
    };
  }
  if ((scope.kind === "ceiling" || scope.kind === "address") && scope.endpointClass === null) {
    const settings = await findSettings(tx);
    const field = scope.kind === "ceiling" ? "perCustomer" : "perAddress";
    const ceilings = {
      ...settings.ceilings,
      [field]: enforced(limit, settings.ceilings[field].onStoreFailure),
    };
    const row = await tx.policySettings.update({
      where: { id: 1 },
      data: { ceilings: toJson(ceilings), version: { increment: 1 } },
      select: settingsSelect,
    });
    return {
      entityType: "settings",
      entityId: "settings",
      before: auditView(settings),
      after: auditView(toSettingsRecord(row)),
    };
  }
  if (
    (scope.kind === "tier" || scope.kind === "ceiling" || scope.kind === "address") &&
    scope.endpointClass !== null
  ) {
    const endpointClass = await findEndpointClass(tx, scope.endpointClass);
    let data: Prisma.EndpointClassUpdateInput;
    if (scope.kind === "tier") {
      const existing = endpointClass.limits[scope.tier];
      const onStoreFailure = existing?.onStoreFailure ?? ON_STORE_FAILURE_DEFAULTS.customer;
      data = {
        limits: toJson({ ...endpointClass.limits, [scope.tier]: enforced(limit, onStoreFailure) }),
      };
    } else if (scope.kind === "ceiling") {
      const onStoreFailure =
        endpointClass.ceiling?.onStoreFailure ?? ON_STORE_FAILURE_DEFAULTS.ceiling;
      data = { ceiling: jsonColumn(enforced(limit, onStoreFailure)) };
    } else {
      const onStoreFailure =
        endpointClass.anonymousLimit?.onStoreFailure ?? ON_STORE_FAILURE_DEFAULTS.anonymousEndpoint;
      data = { anonymousLimit: jsonColumn(enforced(limit, onStoreFailure)) };
    }
    const row = await tx.endpointClass.update({
      where: { name: endpointClass.name },
      data: { ...data, version: { increment: 1 } },
      select: endpointClassSelect,
    });
    return {
      entityType: "endpoint-class",
      entityId: endpointClass.name,
      before: auditView(endpointClass),
      after: auditView(toEndpointClassRecord(row)),
    };
  }
  throw new Error(`candidate target ${candidate.target} cannot be promoted`);
}
