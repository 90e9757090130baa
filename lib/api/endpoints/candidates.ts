import { ZDryRunCandidate } from "@limitplane/enforcer/policy";
import { z } from "zod";
import { createCandidate, ZCreateCandidateOptions } from "@/lib/control/candidate/create-candidate";
import { discardCandidate } from "@/lib/control/candidate/discard-candidate";
import { getCandidate } from "@/lib/control/candidate/get-candidate";
import { listCandidates } from "@/lib/control/candidate/list-candidates";
import { promoteCandidate } from "@/lib/control/candidate/promote-candidate";
import { updateCandidate, ZUpdateCandidateOptions } from "@/lib/control/candidate/update-candidate";
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

export const ZCandidateRecord = z.object({
  ...ZDryRunCandidate.shape,
  createdBy: z.string(),
  ...ZTimestamps,
});
const ZCandidateChange = z.object({ candidate: ZCandidateRecord, ...ZChangeReceipt });
const ZCandidateParams = strictParams({ id: ZDryRunCandidate.shape.id });
const ZVersionedBody = strictBody({ expectedVersion: ZExpectedVersion, reason: ZReason });
const tag = "Dry-run candidates";

export const listCandidatesEndpoint = defineEndpoint({
  method: "GET",
  path: "/api/v1/candidates",
  summary: "List dry-run candidates",
  tag,
  access: "policy.read",
  response: z.object({ candidates: z.array(ZCandidateRecord) }),
  handle: async () => ({ candidates: await listCandidates(controlDeps()) }),
});

export const createCandidateEndpoint = defineEndpoint({
  method: "POST",
  path: "/api/v1/candidates",
  summary: "Run a limit in dry-run next to the rule it would replace",
  tag,
  access: "candidate.write",
  body: strictBody({ ...ZCreateCandidateOptions.shape, reason: ZReason }),
  response: ZCandidateChange,
  successStatus: 201,
  errors: ["CONFLICT"],
  handle: ({ body: { reason, ...candidate }, ...input }) =>
    createCandidate(candidate, changeContextOf(input, reason), controlDeps()),
});

export const getCandidateEndpoint = defineEndpoint({
  method: "GET",
  path: "/api/v1/candidates/{id}",
  summary: "Get a dry-run candidate",
  tag,
  access: "policy.read",
  params: ZCandidateParams,
  response: z.object({ candidate: ZCandidateRecord }),
  errors: ["NOT_FOUND"],
  handle: async ({ params }) => ({ candidate: await getCandidate(params.id, controlDeps()) }),
});

const { id: _id, ...candidateUpdateShape } = ZUpdateCandidateOptions.shape;

export const updateCandidateEndpoint = defineEndpoint({
  method: "PATCH",
  path: "/api/v1/candidates/{id}",
  summary: "Change a dry-run candidate's target or limit",
  tag,
  access: "candidate.write",
  params: ZCandidateParams,
  body: strictBody({ ...candidateUpdateShape, reason: ZReason }),
  response: ZCandidateChange,
  errors: ["NOT_FOUND", "VERSION_CONFLICT"],
  handle: ({ params, body: { reason, ...change }, ...input }) =>
    updateCandidate({ ...change, id: params.id }, changeContextOf(input, reason), controlDeps()),
});

export const promoteCandidateEndpoint = defineEndpoint({
  method: "POST",
  path: "/api/v1/candidates/{id}/promote",
  summary: "Enforce a dry-run candidate: it replaces the rule it targets",
  description:
    "Admins only: promotion rewrites a tier, an endpoint class or a ceiling, which only admins edit directly.",
  tag,
  access: "candidate.promote",
  params: ZCandidateParams,
  body: ZVersionedBody,
  response: ZCandidateChange,
  errors: ["NOT_FOUND", "VERSION_CONFLICT", "APPROVAL_REQUIRED"],
  handle: ({ params, body: { reason, expectedVersion }, ...input }) =>
    promoteCandidate(
      { id: params.id, expectedVersion },
      changeContextOf(input, reason),
      controlDeps(),
    ),
});

export const discardCandidateEndpoint = defineEndpoint({
  method: "POST",
  path: "/api/v1/candidates/{id}/discard",
  summary: "Stop a dry-run candidate; the rule it targeted stays",
  tag,
  access: "candidate.write",
  params: ZCandidateParams,
  body: ZVersionedBody,
  response: ZCandidateChange,
  errors: ["NOT_FOUND", "VERSION_CONFLICT"],
  handle: ({ params, body: { reason, expectedVersion }, ...input }) =>
    discardCandidate(
      { id: params.id, expectedVersion },
      changeContextOf(input, reason),
      controlDeps(),
    ),
});
