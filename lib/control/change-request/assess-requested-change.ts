/**
 * What a requested change would do, as it stands now: the entity before and after, the policy
 * preview and the backtest (the same services the edit forms use), why it needs approval, and
 * the policy version all of it was computed against. Writes nothing.
 */
import {
  fieldErrorsFromZod,
  limitAtScope,
  parsePolicyDocument,
  parseScope,
  type TPolicyLimit,
} from "@limitplane/enforcer/policy";
import type { z } from "zod";
import { latestPolicyVersion } from "../approval/approval-gate";
import { approvalReasons, ruleChangeAt } from "../approval/approval-rules";
import { findApprovalSettings } from "../approval/approval-settings-record";
import { type RunBacktestOptions, runBacktest } from "../backtest/run-backtest";
import { findCandidate } from "../candidate/candidate-record";
import type { ClockedReadDeps } from "../deps";
import { ZDeleteEndpointClassOptions } from "../endpoint-class/delete-endpoint-class";
import { findEndpointClass } from "../endpoint-class/endpoint-class-record";
import { ZUpdateEndpointClassOptions } from "../endpoint-class/update-endpoint-class";
import { AppError, toFieldErrors, validationError } from "../errors";
import { summarizeStoredPolicy } from "../policy/policy-summary";
import {
  type PreviewPolicyChangeOptions,
  previewPolicyChange,
  readPolicyRules,
} from "../policy/preview-policy-change";
import { previewStructureChange } from "../policy/preview-structure-change";
import { summarizeDocument } from "../policy/summarize-document";
import { findSettings } from "../settings/settings-record";
import { ZUpdatePolicySettingsOptions } from "../settings/update-policy-settings";
import { ZStartStagedChangeOptions } from "../staged-change/start-staged-change";
import { auditView } from "../stored";
import { ZDeleteTierOptions } from "../tier/delete-tier";
import { findTier } from "../tier/tier-record";
import { ZUpdateTierOptions } from "../tier/update-tier";
import { assertExpectedVersion } from "../version-conflict";
import { type TRequestedChange, targetOf } from "./change-request-record";

export interface RequestedChangeAssessment {
  readonly diff: { readonly before: unknown; readonly after: unknown };
  readonly preview: unknown;
  /** The backtest's result, `{ error }` when it could not run, or null for kinds it cannot replay. */
  readonly backtest: unknown;
  readonly gatedBy: string[];
  readonly basePolicyVersion: number | null;
}

/** The change with its service's own schema (cross-field rules included), errors under `change.`. */
function checked<Schema extends z.ZodType>(schema: Schema, options: unknown): z.output<Schema> {
  const parsed = schema.safeParse(options);
  if (parsed.success) return parsed.data;
  throw validationError(toFieldErrors(fieldErrorsFromZod(parsed.error), ["change"]));
}

function defined<T extends object>(fields: T): Partial<T> {
  return Object.fromEntries(
    Object.entries(fields).filter(([, value]) => value !== undefined),
  ) as Partial<T>;
}

async function backtestOf(
  draft: RunBacktestOptions["draft"] | null,
  deps: ClockedReadDeps,
): Promise<unknown> {
  if (draft === null) return null;
  try {
    return await runBacktest({ draft }, deps);
  } catch (error: unknown) {
    if (error instanceof AppError) return { error: error.message };
    throw error;
  }
}

/**
 * The assessment of `change` now. VALIDATION_FAILED (fields under `change.`), NOT_FOUND for an
 * unknown entity, VERSION_CONFLICT when `expectedVersion` is not the entity's current version.
 * `rebase` takes the entity's current version instead (a re-preview of a stale request).
 */
export async function assessRequestedChange(
  change: TRequestedChange,
  deps: ClockedReadDeps,
  options: { readonly rebase?: boolean } = {},
): Promise<{ readonly change: TRequestedChange; readonly assessment: RequestedChangeAssessment }> {
  const db = deps.db;
  const basePolicyVersion = await latestPolicyVersion(db);
  const target = targetOf(change);
  let before: { readonly version: number } | null;
  let after: unknown;
  let previewInput: PreviewPolicyChangeOptions | null = null;
  let preview: unknown = null;
  let current = change;
  switch (change.kind) {
    case "tier.update":
    case "tier.delete": {
      const { kind: _kind, ...options } = change;
      checked(change.kind === "tier.update" ? ZUpdateTierOptions : ZDeleteTierOptions, options);
      const tier = auditView(await findTier(db, change.name));
      before = tier;
      if (change.kind === "tier.update") {
        after = { ...tier, ...defined({ displayName: change.displayName, limit: change.limit }) };
        if (change.limit !== undefined) {
          previewInput = { kind: "tier", name: change.name, limit: change.limit };
        }
      } else {
        after = null;
        preview = await previewStructureChange({ kind: "tier-delete", name: change.name }, deps);
      }
      break;
    }
    case "endpoint-class.update":
    case "endpoint-class.delete": {
      const { kind: _kind, ...options } = change;
      checked(
        change.kind === "endpoint-class.update"
          ? ZUpdateEndpointClassOptions
          : ZDeleteEndpointClassOptions,
        options,
      );
      const endpointClass = auditView(await findEndpointClass(db, change.name));
      before = endpointClass;
      if (change.kind === "endpoint-class.update") {
        const { kind: _k, name, expectedVersion: _v, displayName, ...fields } = change;
        after = { ...endpointClass, ...defined({ displayName, ...fields }) };
        if (Object.values(fields).some((value) => value !== undefined)) {
          previewInput = { kind: "endpoint-class", name, ...defined(fields) };
        }
      } else {
        after = null;
        preview = await previewStructureChange(
          { kind: "endpoint-class-delete", name: change.name },
          deps,
        );
      }
      break;
    }
    case "settings.update": {
      const { kind: _kind, ...options } = change;
      checked(ZUpdatePolicySettingsOptions, options);
      const settings = auditView(await findSettings(db));
      before = settings;
      after = {
        ...settings,
        ...defined({
          defaultTier: change.defaultTier,
          defaultEndpointClass: change.defaultEndpointClass,
        }),
        ceilings: { ...settings.ceilings, ...defined(change.ceilings ?? {}) },
        guardrails: { ...settings.guardrails, ...defined(change.guardrails ?? {}) },
      };
      const ruleFields = defined({
        defaultTier: change.defaultTier,
        defaultEndpointClass: change.defaultEndpointClass,
        ceilings: change.ceilings,
      });
      if (Object.keys(ruleFields).length > 0) {
        previewInput = { kind: "settings", ...ruleFields };
      } else if (change.guardrails !== undefined) {
        preview = await previewStructureChange(
          { kind: "guardrails", guardrails: change.guardrails },
          deps,
        );
      }
      break;
    }
    case "candidate.promote": {
      const candidate = await findCandidate(db, change.id);
      await assertExpectedVersion(
        db,
        {
          entityType: "candidate",
          entityId: candidate.id,
          label: `dry-run candidate "${candidate.id}"`,
          current: auditView(candidate),
        },
        change.expectedVersion,
      );
      const { rules } = await readPolicyRules(db);
      const current = limitAtScope(rules, candidate.target);
      const proposed: TPolicyLimit = {
        ...candidate.limit,
        mode: "enforce",
        onStoreFailure: current?.onStoreFailure ?? "local",
      };
      const approvalRules = await findApprovalSettings(db);
      return {
        change,
        assessment: {
          diff: {
            before: { target: candidate.target, limit: current },
            after: { target: candidate.target, limit: proposed },
          },
          preview: null,
          backtest: await backtestOf({ kind: "candidate", id: candidate.id }, deps),
          gatedBy: approvalReasons(
            { ...approvalRules, isEnabled: true },
            ruleChangeAt("candidate.promote", candidate.target, current, proposed),
          ),
          basePolicyVersion,
        },
      };
    }
    case "staged-change.start": {
      const { kind: _kind, ...options } = change;
      const input = checked(ZStartStagedChangeOptions, options);
      const candidate =
        input.candidateId === undefined ? null : await findCandidate(db, input.candidateId);
      const stagedTarget = candidate?.target ?? input.target ?? "";
      const limit = candidate?.limit ?? input.limit;
      if (limit === undefined) throw new Error("the staged change's schema requires a limit");
      const { rules } = await readPolicyRules(db);
      const current = limitAtScope(rules, stagedTarget);
      const proposed: TPolicyLimit = {
        ...limit,
        mode: "enforce",
        onStoreFailure: current?.onStoreFailure ?? "local",
      };
      const scope = parseScope(stagedTarget);
      const approvalRules = await findApprovalSettings(db);
      return {
        change,
        assessment: {
          diff: {
            before: { target: stagedTarget, limit: current },
            after: {
              target: stagedTarget,
              limit: proposed,
              steps: input.steps,
              guard: input.guard,
            },
          },
          preview: null,
          backtest: await backtestOf(
            candidate !== null
              ? { kind: "candidate", id: candidate.id }
              : scope?.kind === "tier" && scope.endpointClass === null
                ? { kind: "tier", name: scope.tier, limit: proposed }
                : null,
            deps,
          ),
          gatedBy: approvalReasons(
            { ...approvalRules, isEnabled: true },
            ruleChangeAt("staged-change.start", stagedTarget, current, proposed),
          ),
          basePolicyVersion,
        },
      };
    }
    case "policy.import": {
      const parsed = parsePolicyDocument(change.document);
      if (!parsed.ok) throw validationError(toFieldErrors(parsed.errors, ["change", "document"]));
      before = null;
      return {
        change,
        assessment: {
          diff: {
            before: await summarizeStoredPolicy(db, deps.clock.nowMs()),
            after: summarizeDocument(parsed.value),
          },
          preview: null,
          backtest: null,
          gatedBy: [],
          basePolicyVersion,
        },
      };
    }
  }
  if (options.rebase === true) {
    current = { ...change, expectedVersion: before.version };
  } else {
    await assertExpectedVersion(
      db,
      {
        entityType: target.entityType,
        entityId: target.entityId,
        label:
          target.entityType === "settings"
            ? "the settings"
            : `${target.entityType} "${target.entityId}"`,
        current: before,
      },
      change.expectedVersion,
    );
  }
  if (previewInput !== null) preview = await previewPolicyChange(previewInput, deps);
  const rules = await findApprovalSettings(db);
  const gatedBy = approvalReasons(
    { ...rules, isEnabled: true },
    { ...target, before, after, changedEntries: null },
  );
  return {
    change: current,
    assessment: {
      diff: { before, after },
      preview,
      backtest: await backtestOf(previewInput, deps),
      gatedBy,
      basePolicyVersion,
    },
  };
}
