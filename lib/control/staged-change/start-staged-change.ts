import { randomBytes } from "node:crypto";
import { limitAtScope, ZDryRunCandidate } from "@limitplane/enforcer/policy";
import { z } from "zod";
import { candidateLabel, findCandidate } from "../candidate/candidate-record";
import { type ChangeContext, parseChange } from "../change-context";
import type { ControlDeps } from "../deps";
import { AppError } from "../errors";
import { type ChangeReceipt, runPolicyChange, type Tx } from "../policy/run-policy-change";
import { parseStoredPolicy, readStoredPolicy } from "../policy/stored-policy";
import { auditView, jsonColumn, toJson } from "../stored";
import {
  findStagedChange,
  type StagedChangeRecord,
  stagedChangeLabel,
  storedSteps,
  ZStagedSteps,
} from "./staged-change-record";
import { ZStagedGuardOverrides } from "./staged-guard";
import { definedFields, findStagedGuardSettings } from "./staged-guard-settings";

export const ZStartStagedChangeOptions = z
  .strictObject({
    /** Generated (`staged-` and random hex) when not given; ignored with `candidateId`. */
    id: ZDryRunCandidate.shape.id.optional(),
    /** An edit: the rule to change (tier:T, tier:T/endpoint:E, ceiling, ...) and its new limit. */
    target: ZDryRunCandidate.shape.target.optional(),
    limit: ZDryRunCandidate.shape.limit.optional(),
    /** Or a dry-run candidate to promote step by step (its id becomes the staged change's). */
    candidateId: ZDryRunCandidate.shape.id.optional(),
    steps: ZStagedSteps,
    /** Any of the guard's fields; the rest come from the guard defaults in the settings. */
    guard: ZStagedGuardOverrides.optional(),
  })
  .superRefine((input, ctx) => {
    const isEdit = input.target !== undefined || input.limit !== undefined;
    if (isEdit && input.candidateId !== undefined) {
      ctx.addIssue({
        code: "custom",
        path: ["candidateId"],
        message: "give either candidateId or target and limit, not both",
      });
    } else if (!isEdit && input.candidateId === undefined) {
      ctx.addIssue({
        code: "custom",
        path: ["target"],
        message: "give target and limit (an edit) or candidateId (a dry-run candidate)",
      });
    } else if (isEdit) {
      if (input.target === undefined) {
        ctx.addIssue({
          code: "custom",
          path: ["target"],
          message: "target is required with limit",
        });
      }
      if (input.limit === undefined) {
        ctx.addIssue({ code: "custom", path: ["limit"], message: "limit is required with target" });
      }
    }
  });
export type StartStagedChangeOptions = z.input<typeof ZStartStagedChangeOptions>;

/**
 * Starts a limit change over a slice of subjects (the first step's), to be widened step by step.
 * The candidate that carries it to the enforcers is created (an edit) or given its slice (a
 * dry-run candidate), in the same transaction as the staged change and its audit entry.
 */
export async function startStagedChange(
  options: StartStagedChangeOptions,
  context: ChangeContext,
  deps: ControlDeps,
): Promise<{ readonly stagedChange: StagedChangeRecord } & ChangeReceipt> {
  const { input, ctx } = parseChange(ZStartStagedChangeOptions, options, context);
  const id = input.candidateId ?? input.id ?? `staged-${randomBytes(6).toString("hex")}`;
  const steps = storedSteps(input.steps);
  const firstSlice = steps[0]?.sliceBasisPoints ?? 0;
  return runPolicyChange(deps, ctx, {
    action: "staged-change.start",
    entityType: "staged-change",
    affectsSnapshot: true,
    focus: { collection: "dryRunCandidates", id },
    async write(tx, nowMs) {
      const existing = await tx.stagedChange.findUnique({ where: { id }, select: { id: true } });
      if (existing !== null) {
        throw new AppError(
          "CONFLICT",
          `${stagedChangeLabel(id)} already exists; choose another id.`,
          {
            fieldErrors: [{ path: "id", message: `"${id}" is already taken` }],
          },
        );
      }
      const candidate =
        input.candidateId === undefined ? null : await findCandidate(tx, input.candidateId);
      if (candidate !== null && candidate.sliceBasisPoints !== undefined) {
        throw new AppError("CONFLICT", `${candidateLabel(candidate.id)} is already staged.`);
      }
      const target = candidate?.target ?? input.target ?? "";
      const limit: object = candidate?.limit ?? input.limit ?? {};
      // Read before the candidate carries the new limit: the stored policy is parsed as a whole,
      // so a limit the policy refuses is reported by the change's own validation, as a 400.
      const previousLimit = await currentLimitAt(tx, target, nowMs);
      if (candidate !== null) {
        await tx.dryRunCandidate.update({
          where: { id },
          data: { sliceBasisPoints: firstSlice, version: { increment: 1 } },
          select: { id: true },
        });
      } else {
        const taken = await tx.dryRunCandidate.findUnique({ where: { id }, select: { id: true } });
        if (taken !== null) {
          throw new AppError(
            "CONFLICT",
            `${candidateLabel(id)} already exists; choose another id.`,
            {
              fieldErrors: [{ path: "id", message: `"${id}" is already taken` }],
            },
          );
        }
        await tx.dryRunCandidate.create({
          data: {
            id,
            target,
            limit: toJson(limit),
            sliceBasisPoints: firstSlice,
            createdBy: ctx.actor.name,
          },
          select: { id: true },
        });
      }
      await refuseSecondOnTarget(tx, id, target);
      const defaults = await findStagedGuardSettings(tx);
      const guard = { ...defaults.guard, ...definedFields(input.guard ?? {}) };
      await tx.stagedChange.create({
        data: {
          id,
          target,
          limit: toJson(limit),
          previousLimit: jsonColumn(previousLimit),
          origin: input.candidateId === undefined ? "edit" : "candidate",
          steps: toJson(steps),
          state: "running",
          stepStartedAt: new Date(nowMs),
          guard: toJson(guard),
          createdBy: ctx.actor.name,
        },
        select: { id: true },
      });
      const stagedChange = await findStagedChange(tx, id);
      return {
        entityId: id,
        customerId: null,
        before: null,
        after: auditView(stagedChange),
        value: { stagedChange },
      };
    },
  });
}

async function refuseSecondOnTarget(tx: Tx, id: string, target: string): Promise<void> {
  const other = await tx.stagedChange.findFirst({
    where: { target, state: { in: ["running", "paused"] }, id: { not: id } },
    select: { id: true },
  });
  if (other !== null) {
    throw new AppError(
      "CONFLICT",
      `${target} already has ${stagedChangeLabel(other.id)} in progress; finish or abort it first.`,
      { fieldErrors: [{ path: "target", message: `${target} is already being staged` }] },
    );
  }
}

/** The enforced limit the target names now, without its mode and failure policy. */
async function currentLimitAt(tx: Tx, target: string, nowMs: number): Promise<object | null> {
  const stored = await readStoredPolicy(tx, {
    nowMs,
    scope: { kind: "core" },
    customers: "referenced",
  });
  if (stored === null) return null;
  const limit = limitAtScope(parseStoredPolicy(stored), target);
  if (limit === null) return null;
  const { mode: _mode, onStoreFailure: _onStoreFailure, ...spec } = limit;
  return spec;
}
