/**
 * The policy model as zod schemas: one definition shared by forms, the API, import, the snapshot
 * publisher and the enforcer. Every object is strict (an unknown field is an error, never ignored),
 * every message names the problem in words a person can act on, and cross-field rules run in
 * `superRefine` with the path of the field to fix.
 *
 * `Z...` are schemas, `T...` the parsed (output) types. Defaults are filled in by parsing, so a
 * parsed document states every mode and failure policy explicitly.
 *
 * One module per entity, in `schemas/` (limits, tiers and endpoint classes, customers and
 * overrides, the cross-field rules, the document, the snapshot); this module is their one entry.
 */

export { ZCanonicalInstant, ZCustomerId, ZInstant } from "./schema-fields";
export {
  CANDIDATE_TARGET_KINDS,
  MAX_FACTOR,
  type TCustomer,
  type TCustomerOverride,
  type TDryRunCandidate,
  type TGuardrails,
  type TIncidentOverride,
  ZCandidateTarget,
  ZCustomer,
  ZCustomerOverride,
  ZDryRunCandidate,
  ZGuardrails,
  ZIncidentOverride,
  ZTicketUrl,
} from "./schemas/customers";
export {
  checkDescriptorMappings,
  DEFAULT_DESCRIPTOR_MAPPINGS,
  findDescriptorMapping,
  MAX_DESCRIPTOR_MAPPINGS,
  type TDescriptorMapping,
  type TDescriptorMappingInput,
  type TLimitOverrideMode,
  ZDescriptorMapping,
  ZLimitOverrideMode,
  ZSnapshotDescriptorMapping,
} from "./schemas/descriptor-mappings";
export {
  checkDescriptorRules,
  descriptorPatternKey,
  formatDescriptorPattern,
  MAX_DESCRIPTOR_PATTERN_ENTRIES,
  MAX_DESCRIPTOR_RAISES,
  MAX_DESCRIPTOR_RULES,
  raiseValueProblem,
  type TDescriptorPatternEntry,
  type TDescriptorRaise,
  type TDescriptorRule,
  type TDescriptorRuleInput,
  type TSnapshotDescriptorRaise,
  type TSnapshotDescriptorRule,
  ZDescriptorPatternEntry,
  ZDescriptorRaise,
  ZDescriptorRule,
  ZDescriptorValueEntry,
  ZSnapshotDescriptorRaise,
  ZSnapshotDescriptorRule,
  ZWildcardCounter,
} from "./schemas/descriptors";
export {
  findReplacedLimit,
  MAX_CUSTOMER_OVERRIDES,
  parsePolicyDocument,
  type TPolicyDocument,
  type TPolicyDocumentInput,
  ZPolicyDocument,
} from "./schemas/document";
export {
  ALGORITHMS,
  type AlgorithmsAreComplete,
  type LimitSpecAgreesWithLimiter,
  ON_STORE_FAILURE_DEFAULTS,
  type TDurability,
  type TLimitSpec,
  type TOnStoreFailure,
  type TPolicyLimit,
  type TPolicyMode,
  ZLimitSpec,
  ZOnStoreFailure,
  ZPolicyLimit,
  ZPolicyMode,
} from "./schemas/limits";
export {
  checkOutboundRaise,
  isOutboundRaiseActive,
  MAX_OUTBOUND_BUDGETS,
  MAX_OUTBOUND_KEY_LENGTH,
  MAX_OUTBOUND_WAIT_MS,
  outboundBudgetAt,
  outboundKeyProblem,
  snapshotOutboundBudget,
  type TOutboundBudget,
  type TOutboundBudgetInput,
  type TOutboundConcurrency,
  type TOutboundKeyBy,
  type TOutboundRaise,
  type TSnapshotOutboundBudget,
  type TSnapshotOutboundRaise,
  ZOutboundBudget,
  ZOutboundConcurrency,
  ZOutboundKeyBy,
  ZOutboundRaise,
  ZSnapshotOutboundBudget,
  ZSnapshotOutboundRaise,
} from "./schemas/outbound";
export { checkSnapshotPolicyCore, type PolicyCore } from "./schemas/rules";
export {
  SNAPSHOT_SCHEMA_VERSION,
  type TSnapshot,
  type TSnapshotPolicy,
  ZSnapshot,
  ZSnapshotCustomerOverride,
  ZSnapshotEndpointClass,
  ZSnapshotIncidentOverride,
  ZSnapshotPolicy,
  ZSnapshotSettings,
  ZSnapshotTier,
} from "./schemas/snapshot";
export {
  type TCeilings,
  type TEndpointClass,
  type TEndpointMatch,
  type TKeyBy,
  type TTier,
  ZCeilings,
  ZEndpointClass,
  ZEndpointMatch,
  ZKeyBy,
  ZMethod,
  ZPathPattern,
  ZTier,
} from "./schemas/tiers";
