import { ZOutboundBudget } from "@limitplane/enforcer/policy";
import { z } from "zod";
import { createOutboundBudget } from "@/lib/control/outbound-budget/create-outbound-budget";
import { deleteOutboundBudget } from "@/lib/control/outbound-budget/delete-outbound-budget";
import { getOutboundBudget } from "@/lib/control/outbound-budget/get-outbound-budget";
import { listOutboundBudgets } from "@/lib/control/outbound-budget/list-outbound-budgets";
import {
  raiseOutboundBudget,
  ZRaiseOutboundBudgetOptions,
} from "@/lib/control/outbound-budget/raise-outbound-budget";
import { revertOutboundRaise } from "@/lib/control/outbound-budget/revert-outbound-raise";
import { updateOutboundBudget } from "@/lib/control/outbound-budget/update-outbound-budget";
import { controlDeps } from "@/lib/server/composition";
import { defineEndpoint } from "../endpoint";
import {
  changeContextOf,
  strictBody,
  strictParams,
  ZChangeReceipt,
  ZExpectedVersion,
  ZReason,
  ZTimestamps,
} from "./shared";

const ZBudget = z.object({
  name: z.string(),
  displayName: z.string().nullable(),
  limit: z.record(z.string(), z.unknown()).nullable(),
  concurrency: z.object({ max: z.number().int(), slotTtlMs: z.number().int() }).nullable(),
  maxWaitMs: z.number().int(),
  keyBy: z.enum(["single", "host", "account"]),
  raise: z
    .object({
      limit: z.record(z.string(), z.unknown()).nullable(),
      concurrencyMax: z.number().int().nullable(),
      startsAt: z.string(),
      expiresAt: z.string(),
      owner: z.string(),
      reason: z.string(),
    })
    .nullable(),
});
export const ZOutboundBudgetRecord = z.object({ ...ZBudget.shape, ...ZTimestamps });
const ZBudgetChange = z.object({ budget: ZOutboundBudgetRecord, ...ZChangeReceipt });
const ZBudgetParams = strictParams({ name: ZOutboundBudget.shape.name });
// A raise is made and ended through its own routes, within the guardrails.
const { raise: _raise, ...createFields } = ZOutboundBudget.shape;
const { name: _name, ...budgetFields } = createFields;
const tag = "Outbound budgets";

export const listOutboundBudgetsEndpoint = defineEndpoint({
  method: "GET",
  path: "/api/v1/outbound-budgets",
  summary: "List outbound budgets",
  tag,
  access: "policy.read",
  response: z.object({ budgets: z.array(ZOutboundBudgetRecord) }),
  handle: async () => ({ budgets: await listOutboundBudgets(controlDeps()) }),
});

export const createOutboundBudgetEndpoint = defineEndpoint({
  method: "POST",
  path: "/api/v1/outbound-budgets",
  summary: "Add a budget for calls to a provider, a host or a channel (scope outbound:<name>)",
  tag,
  access: "outbound-budget.write",
  body: strictBody({ ...createFields, reason: ZReason }),
  response: ZBudgetChange,
  successStatus: 201,
  errors: ["CONFLICT"],
  handle: ({ body: { reason, ...budget }, ...input }) =>
    createOutboundBudget(budget, changeContextOf(input, reason), controlDeps()),
});

export const getOutboundBudgetEndpoint = defineEndpoint({
  method: "GET",
  path: "/api/v1/outbound-budgets/{name}",
  summary: "Get an outbound budget",
  tag,
  access: "policy.read",
  params: ZBudgetParams,
  response: z.object({ budget: ZOutboundBudgetRecord }),
  errors: ["NOT_FOUND"],
  handle: async ({ params }) => ({ budget: await getOutboundBudget(params.name, controlDeps()) }),
});

export const updateOutboundBudgetEndpoint = defineEndpoint({
  method: "PUT",
  path: "/api/v1/outbound-budgets/{name}",
  summary: "Replace an outbound budget (fields left out take their defaults; a raise stays)",
  tag,
  access: "outbound-budget.write",
  params: ZBudgetParams,
  body: strictBody({ ...budgetFields, expectedVersion: ZExpectedVersion, reason: ZReason }),
  response: ZBudgetChange,
  errors: ["NOT_FOUND", "VERSION_CONFLICT"],
  handle: ({ params, body: { reason, ...budget }, ...input }) =>
    updateOutboundBudget(
      { ...budget, name: params.name },
      changeContextOf(input, reason),
      controlDeps(),
    ),
});

export const deleteOutboundBudgetEndpoint = defineEndpoint({
  method: "DELETE",
  path: "/api/v1/outbound-budgets/{name}",
  summary: "Remove an outbound budget",
  tag,
  access: "outbound-budget.write",
  params: ZBudgetParams,
  body: strictBody({ expectedVersion: ZExpectedVersion, reason: ZReason }),
  response: ZBudgetChange,
  errors: ["NOT_FOUND", "VERSION_CONFLICT"],
  handle: ({ params, body: { reason, expectedVersion }, ...input }) =>
    deleteOutboundBudget(
      { name: params.name, expectedVersion },
      changeContextOf(input, reason),
      controlDeps(),
    ),
});

const { name: _raiseName, ...raiseFields } = ZRaiseOutboundBudgetOptions.shape;

export const raiseOutboundBudgetEndpoint = defineEndpoint({
  method: "POST",
  path: "/api/v1/outbound-budgets/{name}/raise",
  summary: "Raise (or cut) an outbound budget for a while",
  description:
    "For a provider's quota change: give the `limit` and/or `concurrencyMax` in force while raised, and `until` (an instant) or `durationMinutes` (from now). Every enforcer applies them until the expiry by its wall clock, then the budget's own. The reason is also the raise's. Bounded by the policy's incident guardrails (`maxIncidentFactor`, `maxIncidentDurationMs`); refused while another raise of the budget is current.",
  tag,
  access: "outbound-budget.raise",
  params: ZBudgetParams,
  body: strictBody({ ...raiseFields, reason: ZReason }),
  response: ZBudgetChange,
  errors: ["NOT_FOUND", "CONFLICT"],
  handle: ({ params, body: { reason, ...raise }, ...input }) =>
    raiseOutboundBudget(
      { ...raise, name: params.name },
      changeContextOf(input, reason),
      controlDeps(),
    ),
});

export const revertOutboundRaiseEndpoint = defineEndpoint({
  method: "DELETE",
  path: "/api/v1/outbound-budgets/{name}/raise",
  summary: "End an outbound budget's current raise now",
  tag,
  access: "outbound-budget.raise",
  params: ZBudgetParams,
  body: strictBody({ expectedVersion: ZExpectedVersion, reason: ZReason }),
  response: ZBudgetChange,
  errors: ["NOT_FOUND", "VERSION_CONFLICT"],
  handle: ({ params, body: { reason, expectedVersion }, ...input }) =>
    revertOutboundRaise(
      { name: params.name, expectedVersion },
      changeContextOf(input, reason),
      controlDeps(),
    ),
});
