import { z } from "zod";
import { findApprovalSettings } from "@/lib/control/approval/approval-settings-record";
import {
  updateApprovalSettings,
  ZUpdateApprovalSettingsOptions,
} from "@/lib/control/approval/update-approval-settings";
import {
  approveChangeRequest,
  ZApproveChangeRequestOptions,
} from "@/lib/control/change-request/approve-change-request";
import {
  CHANGE_REQUEST_STATUSES,
  ZChangeRequestId,
  ZRequestedChange,
} from "@/lib/control/change-request/change-request-record";
import { createChangeRequest } from "@/lib/control/change-request/create-change-request";
import { getChangeRequest } from "@/lib/control/change-request/find-change-request";
import { listChangeRequests } from "@/lib/control/change-request/list-change-requests";
import { refreshChangeRequest } from "@/lib/control/change-request/refresh-change-request";
import { rejectChangeRequest } from "@/lib/control/change-request/reject-change-request";
import { withdrawChangeRequest } from "@/lib/control/change-request/withdraw-change-request";
import { authDeps, controlDeps } from "@/lib/server/composition";
import { defineEndpoint } from "../endpoint";
import {
  changeContextOf,
  queryInt,
  strictBody,
  strictParams,
  ZAuditReceipt,
  ZChangeReceipt,
  ZExpectedVersion,
  ZReason,
} from "./shared";

const tag = "Change requests";

export const ZApprovalSettingsRecord = z.object({
  isEnabled: z.boolean(),
  limitDecreasePercent: z.number().int(),
  isCeilingChangeGated: z.boolean(),
  isDeletionGated: z.boolean(),
  importChangedEntries: z.number().int(),
  requestLifetimeMs: z.number().int(),
  version: z.number().int().describe("0 until first saved; send it back as expectedVersion."),
  createdAt: z.string().nullable(),
  updatedAt: z.string().nullable(),
});

export const ZChangeRequestRecord = z.object({
  id: z.string(),
  status: z.enum(CHANGE_REQUEST_STATUSES),
  action: z.string(),
  entityType: z.string(),
  entityId: z.string(),
  change: ZRequestedChange,
  diff: z.object({ before: z.unknown(), after: z.unknown() }),
  preview: z.unknown().describe("The policy preview as it stood when requested or re-previewed."),
  backtest: z.unknown().describe("The backtest as it stood; null for kinds it cannot replay."),
  gatedBy: z.array(z.string()).describe("Why the change needs approval, in words."),
  reason: z.string(),
  author: z.object({
    type: z.string(),
    id: z.string().nullable(),
    name: z.string(),
    operatorId: z.string().nullable(),
  }),
  basePolicyVersion: z.number().int().nullable(),
  isStale: z
    .boolean()
    .describe("The policy changed since the preview: re-preview before approving."),
  previewedAt: z.string(),
  expiresAt: z.string(),
  decision: z
    .object({
      at: z.string(),
      byId: z.string().nullable(),
      byName: z.string().nullable(),
      note: z.string().nullable(),
    })
    .nullable(),
  auditEntries: z.object({
    request: z.string().nullable(),
    decision: z.string().nullable(),
    applied: z.string().nullable(),
  }),
  appliedPolicyVersion: z.number().int().nullable(),
  version: z.number().int(),
  createdAt: z.string(),
  updatedAt: z.string(),
});

const ZIdParams = strictParams({ id: ZChangeRequestId });
const ZDecided = z.object({ changeRequest: ZChangeRequestRecord, ...ZAuditReceipt });

export const getApprovalSettingsEndpoint = defineEndpoint({
  method: "GET",
  path: "/api/v1/approval-settings",
  summary: "Which changes need a second person's approval",
  tag,
  access: "policy.read",
  response: z.object({ settings: ZApprovalSettingsRecord }),
  handle: async () => ({ settings: await findApprovalSettings(controlDeps().db) }),
});

export const updateApprovalSettingsEndpoint = defineEndpoint({
  method: "PATCH",
  path: "/api/v1/approval-settings",
  summary: "Change which changes need approval (turning it on needs two eligible approvers)",
  tag,
  access: "settings.write",
  body: strictBody({ ...ZUpdateApprovalSettingsOptions.shape, reason: ZReason }),
  response: z.object({ settings: ZApprovalSettingsRecord, ...ZAuditReceipt }),
  errors: ["VERSION_CONFLICT", "CONFLICT"],
  handle: ({ body: { reason, ...change }, ...input }) =>
    updateApprovalSettings(change, changeContextOf(input, reason), authDeps()),
});

export const listChangeRequestsEndpoint = defineEndpoint({
  method: "GET",
  path: "/api/v1/change-requests",
  summary: "List change requests (status=pending: the queue, oldest first)",
  tag,
  access: "policy.read",
  query: strictParams({
    status: z
      .enum(CHANGE_REQUEST_STATUSES, {
        error: `status must be one of: ${CHANGE_REQUEST_STATUSES.join(", ")}`,
      })
      .optional(),
    limit: queryInt("limit", 1, 200).optional(),
  }),
  response: z.object({ changeRequests: z.array(ZChangeRequestRecord) }),
  handle: async ({ query }) => ({
    changeRequests: await listChangeRequests(query, controlDeps()),
  }),
});

export const createChangeRequestEndpoint = defineEndpoint({
  method: "POST",
  path: "/api/v1/change-requests",
  summary: "Request a change that needs a second person's approval",
  description:
    "Saves the change with its diff, preview and backtest as they stand, for another admin to approve. API tokens may request; only a signed-in operator other than the author may approve.",
  tag,
  access: "change.request",
  body: strictBody({ change: ZRequestedChange, reason: ZReason }),
  response: ZDecided,
  successStatus: 201,
  errors: ["NOT_FOUND", "VERSION_CONFLICT", "CONFLICT"],
  handle: ({ body: { reason, change }, ...input }) =>
    createChangeRequest({ change }, changeContextOf(input, reason), controlDeps()),
});

export const getChangeRequestEndpoint = defineEndpoint({
  method: "GET",
  path: "/api/v1/change-requests/{id}",
  summary: "Get a change request",
  tag,
  access: "policy.read",
  params: ZIdParams,
  response: z.object({ changeRequest: ZChangeRequestRecord }),
  errors: ["NOT_FOUND"],
  handle: async ({ params }) => ({
    changeRequest: await getChangeRequest(params.id, controlDeps()),
  }),
});

export const approveChangeRequestEndpoint = defineEndpoint({
  method: "POST",
  path: "/api/v1/change-requests/{id}/approve",
  summary: "Approve a change request: its change is applied at once",
  description:
    "Only a signed-in operator other than the author may approve; an API token never may. A request whose policy changed since its preview is refused as stale: re-preview it first.",
  tag,
  access: "change.approve",
  params: ZIdParams,
  body: strictBody({
    expectedVersion: ZApproveChangeRequestOptions.shape.expectedVersion,
    reason: ZReason.describe("Why you approve it: the decision's audit entry shows it."),
  }),
  response: z.object({ changeRequest: ZChangeRequestRecord, ...ZChangeReceipt }),
  errors: ["NOT_FOUND", "VERSION_CONFLICT", "CONFLICT", "STALE_CHANGE_REQUEST"],
  handle: ({ params, body: { reason, expectedVersion }, ...input }) => {
    const { reason: _reason, ...context } = changeContextOf(input, reason);
    return approveChangeRequest(
      { id: params.id, expectedVersion, note: reason },
      context,
      controlDeps(),
    );
  },
});

const ZDecisionBody = strictBody({ expectedVersion: ZExpectedVersion, reason: ZReason });

export const rejectChangeRequestEndpoint = defineEndpoint({
  method: "POST",
  path: "/api/v1/change-requests/{id}/reject",
  summary: "Reject a change request, with a reason the author sees",
  tag,
  access: "change.approve",
  params: ZIdParams,
  body: ZDecisionBody,
  response: ZDecided,
  errors: ["NOT_FOUND", "VERSION_CONFLICT", "CONFLICT"],
  handle: ({ params, body: { reason, expectedVersion }, ...input }) =>
    rejectChangeRequest(
      { id: params.id, expectedVersion },
      changeContextOf(input, reason),
      controlDeps(),
    ),
});

export const withdrawChangeRequestEndpoint = defineEndpoint({
  method: "POST",
  path: "/api/v1/change-requests/{id}/withdraw",
  summary: "Withdraw your own change request",
  tag,
  access: "change.request",
  params: ZIdParams,
  body: ZDecisionBody,
  response: ZDecided,
  errors: ["NOT_FOUND", "VERSION_CONFLICT", "CONFLICT"],
  handle: ({ params, body: { reason, expectedVersion }, ...input }) =>
    withdrawChangeRequest(
      { id: params.id, expectedVersion },
      changeContextOf(input, reason),
      controlDeps(),
    ),
});

export const refreshChangeRequestEndpoint = defineEndpoint({
  method: "POST",
  path: "/api/v1/change-requests/{id}/preview",
  summary: "Re-preview a change request against the policy as it is now",
  description:
    "Computes the diff, preview and backtest again, rebases the change on the entity's current version and clears staleness; the request's version goes up.",
  tag,
  access: "change.request",
  params: ZIdParams,
  body: ZDecisionBody,
  response: ZDecided,
  errors: ["NOT_FOUND", "VERSION_CONFLICT", "CONFLICT"],
  handle: ({ params, body: { reason, expectedVersion }, ...input }) =>
    refreshChangeRequest(
      { id: params.id, expectedVersion },
      changeContextOf(input, reason),
      controlDeps(),
    ),
});
