/**
 * Every endpoint of the versioned API, in one registry: the OpenAPI document is built from it and
 * the tests walk it (the permission matrix, hostile input, and the check that every definition
 * has its route file and every route file its definition).
 */
import { z } from "zod";
import type { AnyEndpoint } from "../endpoint";
import { defineEndpoint } from "../endpoint";
import { buildOpenApi } from "../openapi";
import {
  getAuditWebhookEndpoint,
  listAuditEntriesEndpoint,
  updateAuditWebhookEndpoint,
  verifyAuditChainEndpoint,
} from "./audit";
import {
  changePasswordEndpoint,
  listSessionsEndpoint,
  meEndpoint,
  revokeSessionEndpoint,
  signInEndpoint,
  signOutEndpoint,
} from "./auth";
import { runBacktestEndpoint } from "./backtest";
import {
  createCandidateEndpoint,
  discardCandidateEndpoint,
  getCandidateEndpoint,
  listCandidatesEndpoint,
  promoteCandidateEndpoint,
  updateCandidateEndpoint,
} from "./candidates";
import {
  approveChangeRequestEndpoint,
  createChangeRequestEndpoint,
  getApprovalSettingsEndpoint,
  getChangeRequestEndpoint,
  listChangeRequestsEndpoint,
  refreshChangeRequestEndpoint,
  rejectChangeRequestEndpoint,
  updateApprovalSettingsEndpoint,
  withdrawChangeRequestEndpoint,
} from "./change-requests";
import {
  createCustomerOverrideEndpoint,
  deleteAccountOverrideEndpoint,
  deleteEndpointOverrideEndpoint,
  listCustomerOverridesEndpoint,
  updateAccountOverrideEndpoint,
  updateEndpointOverrideEndpoint,
} from "./customer-overrides";
import {
  createCustomerEndpoint,
  deleteCustomerEndpoint,
  getCustomerEndpoint,
  listCustomersEndpoint,
  updateCustomerEndpoint,
} from "./customers";
import {
  getDescriptorMappingsEndpoint,
  updateDescriptorMappingsEndpoint,
} from "./descriptor-mappings";
import {
  createDescriptorRuleEndpoint,
  deleteDescriptorRuleEndpoint,
  importEnvoyConfigEndpoint,
  listDescriptorRulesEndpoint,
  raiseDescriptorValueEndpoint,
  revertDescriptorRaiseEndpoint,
  updateDescriptorRuleEndpoint,
} from "./descriptor-rules";
import {
  createEndpointClassEndpoint,
  deleteEndpointClassEndpoint,
  getEndpointClassEndpoint,
  listEndpointClassesEndpoint,
  updateEndpointClassEndpoint,
} from "./endpoint-classes";
import {
  extendIncidentEndpoint,
  getIncidentEndpoint,
  listIncidentsEndpoint,
  raiseIncidentEndpoint,
  revertIncidentEndpoint,
} from "./incidents";
import {
  createOperatorEndpoint,
  disableOperatorEndpoint,
  enableOperatorEndpoint,
  getOperatorEndpoint,
  listOperatorsEndpoint,
  resetOperatorPasswordEndpoint,
  updateOperatorEndpoint,
} from "./operators";
import {
  createOutboundBudgetEndpoint,
  deleteOutboundBudgetEndpoint,
  getOutboundBudgetEndpoint,
  listOutboundBudgetsEndpoint,
  raiseOutboundBudgetEndpoint,
  revertOutboundRaiseEndpoint,
  updateOutboundBudgetEndpoint,
} from "./outbound-budgets";
import {
  explainDescriptorsEndpoint,
  explainEndpoint,
  exportPolicyEndpoint,
  getPropagationEndpoint,
  getSnapshotEndpoint,
  importPolicyEndpoint,
} from "./policy";
import { listRejectedCustomersEndpoint } from "./rejected-customers";
import { getSeenCustomerEndpoint, listSeenCustomersEndpoint } from "./seen-customers";
import { getSettingsEndpoint, updateSettingsEndpoint } from "./settings";
import {
  abortStagedChangeEndpoint,
  advanceStagedChangeEndpoint,
  completeStagedChangeEndpoint,
  getStagedChangeEndpoint,
  getStagedGuardSettingsEndpoint,
  listStagedChangesEndpoint,
  pauseStagedChangeEndpoint,
  resumeStagedChangeEndpoint,
  startStagedChangeEndpoint,
  updateStagedGuardSettingsEndpoint,
} from "./staged-changes";
import {
  createTierEndpoint,
  deleteTierEndpoint,
  getTierEndpoint,
  listTiersEndpoint,
  updateTierEndpoint,
} from "./tiers";
import {
  createApiTokenEndpoint,
  getApiTokenEndpoint,
  listApiTokensEndpoint,
  revokeApiTokenEndpoint,
} from "./tokens";

/** The version in the OpenAPI document's `info`: the API's, not the package's. */
export const API_VERSION = "1.0.0";

export const openApiEndpoint = defineEndpoint({
  method: "GET",
  path: "/api/v1/openapi.json",
  summary: "This API's OpenAPI 3.1 document",
  tag: "Meta",
  access: "public",
  response: z.record(z.string(), z.unknown()),
  handle: async () => buildOpenApi(ENDPOINTS, API_VERSION),
});

export const ENDPOINTS: readonly AnyEndpoint[] = [
  signInEndpoint,
  signOutEndpoint,
  meEndpoint,
  changePasswordEndpoint,
  listSessionsEndpoint,
  revokeSessionEndpoint,
  listOperatorsEndpoint,
  createOperatorEndpoint,
  getOperatorEndpoint,
  updateOperatorEndpoint,
  disableOperatorEndpoint,
  enableOperatorEndpoint,
  resetOperatorPasswordEndpoint,
  listApiTokensEndpoint,
  createApiTokenEndpoint,
  getApiTokenEndpoint,
  revokeApiTokenEndpoint,
  listTiersEndpoint,
  createTierEndpoint,
  getTierEndpoint,
  updateTierEndpoint,
  deleteTierEndpoint,
  listEndpointClassesEndpoint,
  createEndpointClassEndpoint,
  getEndpointClassEndpoint,
  updateEndpointClassEndpoint,
  deleteEndpointClassEndpoint,
  getSettingsEndpoint,
  updateSettingsEndpoint,
  getApprovalSettingsEndpoint,
  updateApprovalSettingsEndpoint,
  listChangeRequestsEndpoint,
  createChangeRequestEndpoint,
  getChangeRequestEndpoint,
  approveChangeRequestEndpoint,
  rejectChangeRequestEndpoint,
  withdrawChangeRequestEndpoint,
  refreshChangeRequestEndpoint,
  listCustomersEndpoint,
  createCustomerEndpoint,
  getCustomerEndpoint,
  updateCustomerEndpoint,
  deleteCustomerEndpoint,
  listSeenCustomersEndpoint,
  getSeenCustomerEndpoint,
  listRejectedCustomersEndpoint,
  listCustomerOverridesEndpoint,
  createCustomerOverrideEndpoint,
  updateAccountOverrideEndpoint,
  deleteAccountOverrideEndpoint,
  updateEndpointOverrideEndpoint,
  deleteEndpointOverrideEndpoint,
  listIncidentsEndpoint,
  raiseIncidentEndpoint,
  getIncidentEndpoint,
  extendIncidentEndpoint,
  revertIncidentEndpoint,
  listCandidatesEndpoint,
  createCandidateEndpoint,
  getCandidateEndpoint,
  updateCandidateEndpoint,
  promoteCandidateEndpoint,
  discardCandidateEndpoint,
  listDescriptorRulesEndpoint,
  createDescriptorRuleEndpoint,
  updateDescriptorRuleEndpoint,
  deleteDescriptorRuleEndpoint,
  raiseDescriptorValueEndpoint,
  revertDescriptorRaiseEndpoint,
  importEnvoyConfigEndpoint,
  getDescriptorMappingsEndpoint,
  updateDescriptorMappingsEndpoint,
  listOutboundBudgetsEndpoint,
  createOutboundBudgetEndpoint,
  getOutboundBudgetEndpoint,
  updateOutboundBudgetEndpoint,
  deleteOutboundBudgetEndpoint,
  raiseOutboundBudgetEndpoint,
  revertOutboundRaiseEndpoint,
  listStagedChangesEndpoint,
  startStagedChangeEndpoint,
  getStagedChangeEndpoint,
  pauseStagedChangeEndpoint,
  resumeStagedChangeEndpoint,
  advanceStagedChangeEndpoint,
  completeStagedChangeEndpoint,
  abortStagedChangeEndpoint,
  getStagedGuardSettingsEndpoint,
  updateStagedGuardSettingsEndpoint,
  getSnapshotEndpoint,
  getPropagationEndpoint,
  exportPolicyEndpoint,
  importPolicyEndpoint,
  explainEndpoint,
  explainDescriptorsEndpoint,
  runBacktestEndpoint,
  listAuditEntriesEndpoint,
  verifyAuditChainEndpoint,
  getAuditWebhookEndpoint,
  updateAuditWebhookEndpoint,
  openApiEndpoint,
];
