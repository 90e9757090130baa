import { MAX_INCIDENT_DURATION_MS, ZIncidentOverride } from "@limitplane/enforcer/policy";
import { z } from "zod";
import { extendIncident, ZExtendIncidentOptions } from "@/lib/control/incident/extend-incident";
import { getIncident } from "@/lib/control/incident/get-incident";
import { listIncidents, ZListIncidentsOptions } from "@/lib/control/incident/list-incidents";
import { raiseIncident, ZRaiseIncidentOptions } from "@/lib/control/incident/raise-incident";
import { revertIncident } from "@/lib/control/incident/revert-incident";
import { controlDeps, seenRedisDeps } from "@/lib/server/composition";
import { defineEndpoint } from "../endpoint";
import {
  changeContextOf,
  queryInt,
  strictBody,
  strictParams,
  ZChangeReceipt,
  ZExpectedVersion,
  ZReason,
  ZTimestamps,
} from "./shared";

const ZIncidentState = z.enum(["upcoming", "active", "expired", "reverted"]);

export const ZIncidentRecord = z.object({
  ...ZIncidentOverride.shape,
  createdBy: z.string(),
  revokedAt: z.string().nullable(),
  revokedBy: z.string().nullable(),
  expiryRecordedAt: z.string().nullable(),
  ...ZTimestamps,
});
const ZIncidentWithState = z.object({ ...ZIncidentRecord.shape, state: ZIncidentState });
const ZIncidentChange = z.object({ incident: ZIncidentRecord, ...ZChangeReceipt });
const ZIncidentParams = strictParams({ id: ZIncidentOverride.shape.id });
const tag = "Incident overrides";

export const listIncidentsEndpoint = defineEndpoint({
  method: "GET",
  path: "/api/v1/incidents",
  summary: "List incident overrides: current (default), history or all",
  tag,
  access: "policy.read",
  query: strictParams({
    customerId: ZListIncidentsOptions.shape.customerId,
    status: ZListIncidentsOptions.shape.status.unwrap().optional(),
    expiringWithinMs: queryInt("expiringWithinMs", 1, MAX_INCIDENT_DURATION_MS).optional(),
    limit: queryInt("limit", 1, 500).optional(),
  }),
  response: z.object({ incidents: z.array(ZIncidentWithState) }),
  handle: async ({ query }) => ({ incidents: await listIncidents(query, controlDeps()) }),
});

const { reason: _incidentReason, ...raiseShape } = ZRaiseIncidentOptions.shape;

export const raiseIncidentEndpoint = defineEndpoint({
  method: "POST",
  path: "/api/v1/incidents",
  summary: "Raise (or cut) one customer's limit for a while",
  description:
    "Give `factor` (2 doubles the limit it replaces) or an absolute `limit`, and `durationMs` or `expiresAt`. `endpointClass` null or absent: all endpoints. The reason is also the incident's. Bounded by the policy's guardrails.",
  tag,
  access: "incident.write",
  body: strictBody({ ...raiseShape, reason: ZReason }),
  response: ZIncidentChange,
  successStatus: 201,
  errors: ["CONFLICT"],
  handle: ({ body: { reason, ...incident }, ...input }) =>
    raiseIncident(incident, changeContextOf(input, reason), controlDeps(), seenRedisDeps()),
});

export const getIncidentEndpoint = defineEndpoint({
  method: "GET",
  path: "/api/v1/incidents/{id}",
  summary: "Get an incident override and where it stands",
  tag,
  access: "policy.read",
  params: ZIncidentParams,
  response: z.object({ incident: ZIncidentWithState }),
  errors: ["NOT_FOUND"],
  handle: async ({ params }) => ({ incident: await getIncident(params.id, controlDeps()) }),
});

const { id: _id, ...extendShape } = ZExtendIncidentOptions.shape;

export const extendIncidentEndpoint = defineEndpoint({
  method: "POST",
  path: "/api/v1/incidents/{id}/extend",
  summary: "Move a current incident's expiry later",
  description: "Give the new `expiresAt`, or `durationMs` counted from the incident's start.",
  tag,
  access: "incident.write",
  params: ZIncidentParams,
  body: strictBody({ ...extendShape, reason: ZReason }),
  response: ZIncidentChange,
  errors: ["NOT_FOUND", "VERSION_CONFLICT", "CONFLICT"],
  handle: ({ params, body: { reason, ...change }, ...input }) =>
    extendIncident({ ...change, id: params.id }, changeContextOf(input, reason), controlDeps()),
});

export const revertIncidentEndpoint = defineEndpoint({
  method: "POST",
  path: "/api/v1/incidents/{id}/revert",
  summary: "End a current incident now",
  tag,
  access: "incident.write",
  params: ZIncidentParams,
  body: strictBody({ expectedVersion: ZExpectedVersion, reason: ZReason }),
  response: ZIncidentChange,
  errors: ["NOT_FOUND", "VERSION_CONFLICT", "CONFLICT"],
  handle: ({ params, body: { reason, expectedVersion }, ...input }) =>
    revertIncident(
      { id: params.id, expectedVersion },
      changeContextOf(input, reason),
      controlDeps(),
    ),
});
