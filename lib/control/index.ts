/**
 * The control plane's policy services: one function per operation, each validating its input,
 * writing the change and exactly one audit entry in one transaction, and publishing a new policy
 * version when enforcers would see a difference. Route handlers and pages call these and never
 * touch Prisma. See README.md.
 */

export {
  type ConsoleAlert,
  DEGRADED_DECISION_ALERT_DEFAULTS,
  type DegradedDecisionAlert,
  type DegradedDecisionAlertOptions,
  detectDegradedDecisions,
  detectExpiringIncidents,
  detectRejectionRateAlerts,
  evaluateRejectionRates,
  INCIDENT_EXPIRY_ALERT_DEFAULTS,
  type IncidentExpiryAlert,
  type IncidentExpiryAlertOptions,
  type IncidentForExpiry,
  REJECTION_RATE_ALERT_DEFAULTS,
  type RejectionRateAlert,
  type RejectionRateAlertOptions,
  type RejectionRateVerdict,
  type ScopeRateEvaluation,
  type WindowRate,
} from "./alerts/alert-rules";
export {
  AUDIT_ACTIONS,
  AUDIT_ENTITY_TYPES,
  type AuditAction,
  type AuditEntityType,
  isAuditAction,
} from "./audit/audit-actions";
export { customerHistory } from "./audit/customer-history";
export { getAuditEntry } from "./audit/get-audit-entry";
export {
  type AuditEntryRecord,
  type AuditPage,
  type ListAuditEntriesOptions,
  listAuditEntries,
  ZListAuditEntriesOptions,
} from "./audit/list-audit-entries";
export {
  type AuditedChange,
  type AuditReceipt,
  runAuditedChange,
} from "./audit/run-audited-change";
export {
  type SummarizableAuditEntry,
  summarizeAuditEntry,
} from "./audit/summarize-audit-entry";
export {
  type AuditChainVerification,
  verifyAuditChain,
} from "./audit/verify-audit-chain";
export { type SessionSettings, SIGN_IN_LIMITS, type SignInLimits } from "./auth/auth-settings";
export {
  authenticateApiToken,
  authenticateRequest,
  authenticateSessionToken,
  credentialOf,
} from "./auth/authenticate";
export { changeOwnPassword } from "./auth/change-own-password";
export { describePrincipal, type PrincipalDescription } from "./auth/describe-principal";
export { listSessions } from "./auth/list-sessions";
export { actorOf, type Principal } from "./auth/principal";
export { revokeSession } from "./auth/revoke-session";
export { can, isRole, PERMISSIONS, type Permission, ROLES, type Role } from "./auth/roles";
export {
  clearedSessionCookieHeader,
  isSecureCookieRequest,
  SESSION_COOKIE,
  sessionCookieAttributes,
  sessionCookieHeader,
} from "./auth/session-cookie";
export type { SessionRecord } from "./auth/session-record";
export { type SignInOptions, type SignInResult, signIn } from "./auth/sign-in";
export { SignInLimiter } from "./auth/sign-in-limiter";
export { signOut } from "./auth/sign-out";
export type { TBacktestDraft } from "./backtest/backtest-draft";
export {
  type BacktestResult,
  MAX_BACKTEST_WINDOW_MS,
  type RunBacktestOptions,
  runBacktest,
} from "./backtest/run-backtest";
export type { CandidateRecord } from "./candidate/candidate-record";
export {
  type CreateCandidateOptions,
  createCandidate,
  ZCreateCandidateOptions,
} from "./candidate/create-candidate";
export {
  type DiscardCandidateOptions,
  discardCandidate,
  ZDiscardCandidateOptions,
} from "./candidate/discard-candidate";
export { getCandidate } from "./candidate/get-candidate";
export { listCandidates } from "./candidate/list-candidates";
export {
  type PromoteCandidateOptions,
  promoteCandidate,
  ZPromoteCandidateOptions,
} from "./candidate/promote-candidate";
export {
  type UpdateCandidateOptions,
  updateCandidate,
  ZUpdateCandidateOptions,
} from "./candidate/update-candidate";
export {
  ACTOR_TYPES,
  type Actor,
  type ActorType,
  type ChangeContext,
  systemActor,
  ZActor,
  ZChangeContext,
} from "./change-context";
export { type CreateCustomerOptions, createCustomer } from "./customer/create-customer";
export type { CustomerRecord } from "./customer/customer-record";
export {
  type DeleteCustomerOptions,
  deleteCustomer,
  ZDeleteCustomerOptions,
} from "./customer/delete-customer";
export { getCustomer } from "./customer/get-customer";
export {
  type CustomerPage,
  type ListCustomersOptions,
  listCustomers,
  ZListCustomersOptions,
} from "./customer/list-customers";
export {
  type UpdateCustomerOptions,
  updateCustomer,
  ZUpdateCustomerOptions,
} from "./customer/update-customer";
export {
  type CreateCustomerOverrideOptions,
  createCustomerOverride,
} from "./customer-override/create-customer-override";
export type { CustomerOverrideRecord } from "./customer-override/customer-override-record";
export {
  type DeleteCustomerOverrideOptions,
  deleteCustomerOverride,
  ZDeleteCustomerOverrideOptions,
} from "./customer-override/delete-customer-override";
export { listCustomerOverrides } from "./customer-override/list-customer-overrides";
export {
  type UpdateCustomerOverrideOptions,
  updateCustomerOverride,
  ZUpdateCustomerOverrideOptions,
} from "./customer-override/update-customer-override";
export type { AuthDeps, Clock, ClockedReadDeps, ControlDeps, FleetDeps, ReadDeps } from "./deps";
export type { DescriptorMappingsRecord } from "./descriptor-mapping/descriptor-mapping-record";
export { getDescriptorMappings } from "./descriptor-mapping/get-descriptor-mappings";
export type { DescriptorRuleRecord } from "./descriptor-rule/descriptor-rule-record";
export { getDescriptorRule } from "./descriptor-rule/get-descriptor-rule";
export { listDescriptorRules } from "./descriptor-rule/list-descriptor-rules";
export {
  type PolicyRollout,
  type ReadPolicyRolloutOptions,
  readPolicyRollout,
} from "./dry-run/read-policy-rollout";
export {
  type ReadScopeCountsOptions,
  readScopeCounts,
  type ScopeCounts,
  type ScopeCountsDeps,
} from "./dry-run/read-scope-counts";
export {
  type CreateEndpointClassOptions,
  createEndpointClass,
} from "./endpoint-class/create-endpoint-class";
export {
  type DeleteEndpointClassOptions,
  deleteEndpointClass,
  ZDeleteEndpointClassOptions,
} from "./endpoint-class/delete-endpoint-class";
export type { EndpointClassRecord } from "./endpoint-class/endpoint-class-record";
export { getEndpointClass } from "./endpoint-class/get-endpoint-class";
export { listEndpointClasses } from "./endpoint-class/list-endpoint-classes";
export {
  type UpdateEndpointClassOptions,
  updateEndpointClass,
  ZUpdateEndpointClassOptions,
} from "./endpoint-class/update-endpoint-class";
export {
  AppError,
  type ErrorCode,
  type FieldError,
  HTTP_STATUS,
  isAppError,
} from "./errors";
export {
  type DescriptorsExplanation,
  explainDescriptors,
  ZExplainDescriptorsOptions,
} from "./explain/explain-descriptors";
export { type Explanation, explainLimits, ZExplainOptions } from "./explain/explain-limits";
export {
  type ExtendIncidentOptions,
  extendIncident,
  ZExtendIncidentOptions,
} from "./incident/extend-incident";
export { getIncident } from "./incident/get-incident";
export { type IncidentEffect, incidentBaseRule, incidentEffect } from "./incident/incident-effect";
export type { IncidentRecord, IncidentState } from "./incident/incident-record";
export {
  type IncidentPage,
  type IncidentWithState,
  type ListIncidentsOptions,
  listIncidents,
  listIncidentsPage,
  ZListIncidentsOptions,
} from "./incident/list-incidents";
export {
  type RaiseIncidentOptions,
  raiseIncident,
  ZRaiseIncidentOptions,
} from "./incident/raise-incident";
export { recordIncidentExpiries } from "./incident/record-incident-expiries";
export {
  type RevertIncidentOptions,
  revertIncident,
  ZRevertIncidentOptions,
} from "./incident/revert-incident";
export {
  type CountTotals,
  groupByScope,
  isUsableCount,
  MINUTE_MS,
  type ScopeMinuteCount,
  sumRange,
} from "./metric-minute/minute-counts";
export { createOperator } from "./operator/create-operator";
export { disableOperator } from "./operator/disable-operator";
export { enableOperator } from "./operator/enable-operator";
export { getOperator } from "./operator/get-operator";
export { listOperators } from "./operator/list-operators";
export type { OperatorRecord } from "./operator/operator-record";
export { resetOperatorPassword } from "./operator/reset-operator-password";
export { updateOperator } from "./operator/update-operator";
export { getOutboundBudget } from "./outbound-budget/get-outbound-budget";
export { listOutboundBudgets } from "./outbound-budget/list-outbound-budgets";
export {
  listOutboundRaises,
  type RaisedOutboundBudget,
} from "./outbound-budget/list-outbound-raises";
export type { OutboundBudgetRecord } from "./outbound-budget/outbound-budget-record";
export {
  type ListOutboundMinutesOptions,
  listOutboundMinutes,
  type OutboundMinuteRecord,
} from "./outbound-minute/list-outbound-minutes";
export type { DrainOutcome, SnapshotPublisher } from "./outbox/publish-pending-snapshots";
export { exportPolicy, type PolicyExport } from "./policy/export-policy";
export { type CurrentSnapshot, getCurrentSnapshot } from "./policy/get-current-snapshot";
export { importPolicy } from "./policy/import-policy";
export type { PolicySummary } from "./policy/policy-summary";
export {
  type LimitChangeReach,
  type OutrankingCustomer,
  type PolicyChangePreview,
  PREVIEW_SAMPLE_SIZE,
  type PreviewedLimitChange,
  type PreviewPolicyChangeOptions,
  previewPolicyChange,
  ZPreviewPolicyChangeOptions,
} from "./policy/preview-policy-change";
export {
  type PreviewStructureChangeOptions,
  previewStructureChange,
  type StructureChangePreview,
} from "./policy/preview-structure-change";
export type { ChangeReceipt } from "./policy/run-policy-change";
export {
  type Propagation,
  type PropagationDeps,
  type RegionPropagation,
  readLatestPropagation,
  readPropagation,
} from "./region/read-propagation";
export {
  listRejectedCustomers,
  type RejectedAnonymousRecord,
  type RejectedCustomerPage,
  type RejectedCustomerRecord,
} from "./rejected-customer/list-rejected-customers";
export { findSeenCustomer, getSeenCustomer } from "./seen-customer/get-seen-customer";
export { listSeenCustomers, type SeenCustomerPage } from "./seen-customer/list-seen-customers";
export type { SeenCustomerRecord } from "./seen-customer/seen-customer-record";
export { getPolicySettings } from "./settings/get-policy-settings";
export type { PolicySettingsRecord } from "./settings/settings-record";
export {
  type UpdatePolicySettingsOptions,
  updatePolicySettings,
  ZUpdatePolicySettingsOptions,
} from "./settings/update-policy-settings";
export { type CreateTierOptions, createTier } from "./tier/create-tier";
export { type DeleteTierOptions, deleteTier, ZDeleteTierOptions } from "./tier/delete-tier";
export { getTier } from "./tier/get-tier";
export { listTiers } from "./tier/list-tiers";
export type { TierRecord } from "./tier/tier-record";
export { type UpdateTierOptions, updateTier, ZUpdateTierOptions } from "./tier/update-tier";
export type { ApiTokenRecord } from "./token/api-token-record";
export { createApiToken } from "./token/create-api-token";
export { getApiToken } from "./token/get-api-token";
export { listApiTokens } from "./token/list-api-tokens";
export { revokeApiToken } from "./token/revoke-api-token";
