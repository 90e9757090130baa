import { randomBytes } from "node:crypto";
import {
  checkIncidentGuardrails,
  fieldErrorsFromZod,
  formatFieldPath,
  type TDescriptorRaise,
  ZDescriptorRaise,
  ZDescriptorRule,
  ZInstant,
} from "@limitplane/enforcer/policy";
import { z } from "zod";
import { type ChangeContext, parseChange } from "../change-context";
import type { ControlDeps } from "../deps";
import { toFieldErrors, validationError } from "../errors";
import { ZIncidentDurationMs } from "../incident/raise-incident-options";
import { type ChangeReceipt, runPolicyChange } from "../policy/run-policy-change";
import { findSettings } from "../settings/settings-record";
import { auditView } from "../stored";
import {
  type DescriptorRuleRecord,
  descriptorRuleData,
  descriptorRuleSelect,
  findDescriptorRule,
  toDescriptorRuleRecord,
} from "./descriptor-rule-record";

const shape = ZDescriptorRaise.shape;

/** What a raise of one descriptor value says: one definition for the service, API and form. */
export const ZRaiseDescriptorValueOptions = z
  .strictObject({
    /** The rule whose limit is raised for one value. */
    ruleId: ZDescriptorRule.shape.id,
    /** Generated (`raise-` and random hex) when not given. */
    id: shape.id.optional(),
    /** The value, level by level (`[{ key: "tenant", value: "acme" }]`). */
    descriptor: shape.descriptor,
    /** Multiplies the rule's limit; give this or `limit`. */
    factor: shape.factor,
    /** An absolute limit instead of a factor. */
    limit: shape.limit,
    /** @default now */
    startsAt: ZInstant.optional(),
    /** When it ends; give this or `durationMs` (from `startsAt`). */
    expiresAt: ZInstant.optional(),
    durationMs: ZIncidentDurationMs.optional(),
    /** Who is responsible for it. @default the actor's name */
    owner: shape.owner.optional(),
    /** Why, as shown on the raise. @default the change's reason */
    reason: shape.reason.optional(),
  })
  .superRefine((options, ctx) => {
    if ((options.expiresAt === undefined) === (options.durationMs === undefined)) {
      ctx.addIssue({
        code: "custom",
        path: ["expiresAt"],
        message: "give either expiresAt or durationMs (how long from startsAt)",
      });
    }
  });
export type RaiseDescriptorValueOptions = z.input<typeof ZRaiseDescriptorValueOptions>;

function generateRaiseId(): string {
  return `raise-${randomBytes(6).toString("hex")}`;
}

/**
 * Raises (or cuts) one descriptor rule's limit for one value for a while, as an incident override
 * does for a customer: "raise `tenant=acme` for 2 hours". The value keeps counting on the rule's
 * counter; the raise ends by itself at its expiry (enforcers go by the wall clock). Bounded by the
 * policy's guardrails like an incident. Raises of the rule already past stay until the worker
 * records their expiry and takes them out (`record-descriptor-raise-expiries.ts`).
 */
export async function raiseDescriptorValue(
  options: RaiseDescriptorValueOptions,
  context: ChangeContext,
  deps: ControlDeps,
): Promise<
  { readonly rule: DescriptorRuleRecord; readonly raise: TDescriptorRaise } & ChangeReceipt
> {
  const { input, ctx } = parseChange(ZRaiseDescriptorValueOptions, options, context);
  const nowMs = deps.clock.nowMs();
  const startsAt = input.startsAt ?? new Date(nowMs).toISOString();
  const parsed = ZDescriptorRaise.safeParse({
    id: input.id ?? generateRaiseId(),
    descriptor: input.descriptor,
    factor: input.factor,
    limit: input.limit,
    startsAt,
    expiresAt:
      input.expiresAt ?? new Date(Date.parse(startsAt) + (input.durationMs ?? 0)).toISOString(),
    owner: input.owner ?? ctx.actor.name,
    reason: input.reason ?? ctx.reason,
  });
  if (!parsed.success) throw validationError(toFieldErrors(fieldErrorsFromZod(parsed.error)));
  const raise = parsed.data;
  return runPolicyChange(deps, ctx, {
    action: "descriptor-rule.raise",
    entityType: "descriptor-rule",
    affectsSnapshot: true,
    focus: { collection: "descriptorRules", id: input.ruleId },
    async write(tx, changeNowMs) {
      if (Date.parse(raise.expiresAt) <= changeNowMs) {
        throw validationError([
          { path: "expiresAt", message: "expiresAt is already past; choose a future instant" },
        ]);
      }
      const current = await findDescriptorRule(tx, input.ruleId);
      // The guardrails, at the raise's own fields (the policy's check would name the rule's list).
      const { guardrails } = await findSettings(tx);
      const beyond = checkIncidentGuardrails(raise, {
        guardrails,
        replacedLimit: typeof current.limit === "string" ? null : current.limit,
      });
      if (beyond.length > 0) {
        throw validationError(
          beyond.map((error) => ({ path: formatFieldPath(error.path), message: error.message })),
        );
      }
      if (current.raises.some((other) => other.id === raise.id)) {
        throw validationError([{ path: "id", message: `"${raise.id}" is already taken` }]);
      }
      const { version: _v, createdAt: _c, updatedAt: _u, ...rule } = current;
      const raises = [...rule.raises, raise];
      const next = ZDescriptorRule.safeParse({ ...rule, raises });
      if (!next.success) {
        // The raise's own problems, at its fields (`descriptor.0.value`), not the rule's list.
        const at = raises.length - 1;
        throw validationError(
          toFieldErrors(
            fieldErrorsFromZod(next.error).map((error) =>
              error.path[0] === "raises" && error.path[1] === at
                ? { ...error, path: error.path.slice(2) }
                : error,
            ),
          ),
        );
      }
      const row = await tx.descriptorRule.update({
        where: { id: input.ruleId },
        data: { ...descriptorRuleData(next.data), version: { increment: 1 } },
        select: descriptorRuleSelect,
      });
      const updated = toDescriptorRuleRecord(row);
      return {
        entityId: input.ruleId,
        customerId: null,
        before: auditView(current),
        after: auditView(updated),
        value: { rule: updated, raise },
      };
    },
  });
}
