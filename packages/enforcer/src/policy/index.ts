/**
 * `@limitplane/enforcer/policy`: the policy model shared by the control plane and the enforcers.
 * Schemas (zod, `Z*` with their `T*` types), names, resolution of layered limits with its trace,
 * snapshot compilation and parsing, the entry set with its checksum, deltas, the binary snapshot
 * the control plane publishes, and the enforcer's policy state, canonical export, policy diffs and the incident guardrails.
 * Pure: no I/O, no clock, no `node:*` import. See README.md. Modules not exported here are
 * internal to the package.
 */

export { forwardedClientAddress, normalizeClientAddress } from "./address";
export { BinarySnapshotWriter, type Sha256Bytes } from "./binary-snapshot";
export {
  type CanonicalPolicyParts,
  canonicalJson,
  canonicalPolicy,
  sortPolicyDocument,
  writeCanonicalPolicy,
} from "./canonical";
export {
  applyReplaces,
  type DescriptorCheck,
  type DescriptorEntry,
  type DescriptorMatch,
  DescriptorRuleIndex,
  type DescriptorRuling,
  denyOutcomeOf,
  descriptorCheckOf,
  descriptorRuleScope,
  ruleDescriptors,
} from "./descriptor-rules";
export {
  CORE_KINDS_OF_ENTRIES,
  candidateEntryKey,
  compileEntries,
  EMPTY_SET_CHECKSUM,
  type EntryKind,
  EntrySetSum,
  endpointClassEntryKey,
  entriesOfSnapshotPolicy,
  entryCustomerId,
  entryDigestHex,
  entryExpiresAtMs,
  entryKindOfKey,
  entrySetChecksum,
  entryText,
  incidentEntryKey,
  outboundBudgetEntryKey,
  overrideEntryKey,
  type PolicyEntry,
  parseEntry,
  parseEntryText,
  SETTINGS_KEY,
  snapshotPolicyOfEntries,
  tierEntryKey,
} from "./entries";
export {
  type FieldPath,
  fieldErrorsFromZod,
  formatFieldErrors,
  formatFieldPath,
  type ParseResult,
  type PolicyFieldError,
} from "./errors";
export {
  type FormatNumberOptions,
  formatDuration,
  formatDurationMs,
  formatNumber,
  formatQuantity,
  formatSeconds,
  NO_VALUE,
} from "./format";
export {
  checkCountGuardrail,
  checkIncidentGuardrails,
  DEFAULT_GUARDRAILS,
  type GuardrailSettings,
  type IncidentChange,
} from "./guardrails";
export {
  assertNever,
  limitRatePerSec,
  limitSize,
  MAX_COST,
  MAX_INCIDENT_DURATION_MS,
  MAX_WINDOW_MS,
  scaleLimit,
} from "./limit-math";
export { hasForbiddenCharacter, isCustomerId, isName, isRecordId } from "./names";
export {
  MAX_DELTA_CHANGES,
  POLICY_DELTA_FORMAT,
  parsePolicyDelta,
  type TPolicyDelta,
  ZPolicyDelta,
} from "./policy-delta";
export {
  diffPolicyRules,
  type FieldChange,
  type LimitChange,
  limitAtScope,
  type OverrideHolder,
  outranksChange,
  type PolicyRules,
  type PolicyRulesDiff,
} from "./policy-diff";
export { PolicyState, type PolicyStateOptions, type PolicyStateSize } from "./policy-state";
export {
  globalLimitScopes,
  globalLimitScopesOfPolicy,
  type PreparedSnapshot,
  prepareSnapshot,
} from "./prepare";
export {
  explainTrace,
  type Resolution,
  type ResolutionTrace,
  type ResolvedCheck,
  type ResolveRequest,
  resolveLimits,
  type TraceRule,
  type TraceStatus,
} from "./resolve";
export { textField } from "./schema-fields";
export {
  ALGORITHMS,
  checkOutboundRaise,
  DEFAULT_DESCRIPTOR_MAPPINGS,
  descriptorPatternKey,
  findDescriptorMapping,
  findReplacedLimit,
  formatDescriptorPattern,
  isOutboundRaiseActive,
  MAX_CUSTOMER_OVERRIDES,
  MAX_DESCRIPTOR_MAPPINGS,
  MAX_DESCRIPTOR_PATTERN_ENTRIES,
  MAX_DESCRIPTOR_RULES,
  MAX_OUTBOUND_BUDGETS,
  MAX_OUTBOUND_KEY_LENGTH,
  MAX_OUTBOUND_WAIT_MS,
  ON_STORE_FAILURE_DEFAULTS,
  outboundBudgetAt,
  outboundKeyProblem,
  parsePolicyDocument,
  type TCeilings,
  type TCustomer,
  type TCustomerOverride,
  type TDescriptorMapping,
  type TDescriptorMappingInput,
  type TDescriptorRaise,
  type TDescriptorRule,
  type TDescriptorRuleInput,
  type TDryRunCandidate,
  type TDurability,
  type TEndpointClass,
  type TGuardrails,
  type TIncidentOverride,
  type TKeyBy,
  type TLimitOverrideMode,
  type TLimitSpec,
  type TOnStoreFailure,
  type TOutboundBudget,
  type TOutboundBudgetInput,
  type TOutboundKeyBy,
  type TOutboundRaise,
  type TPolicyDocument,
  type TPolicyDocumentInput,
  type TPolicyLimit,
  type TPolicyMode,
  type TSnapshot,
  type TSnapshotOutboundBudget,
  type TTier,
  ZCeilings,
  ZCustomer,
  ZCustomerId,
  ZCustomerOverride,
  ZDescriptorMapping,
  ZDescriptorRaise,
  ZDescriptorRule,
  ZDescriptorValueEntry,
  ZDryRunCandidate,
  ZEndpointClass,
  ZGuardrails,
  ZIncidentOverride,
  ZInstant,
  ZLimitOverrideMode,
  ZLimitSpec,
  ZOutboundBudget,
  ZOutboundRaise,
  ZPolicyDocument,
  ZPolicyLimit,
  ZSnapshot,
  ZSnapshotOutboundBudget,
  ZTier,
} from "./schemas";
export {
  formatOutboundScope,
  formatScope,
  parseOutboundScope,
  parseScope,
  type Scope,
} from "./scope";
export { sha256Hex } from "./sha256";
export { compileSnapshot, parseSnapshot, snapshotOfEntries } from "./snapshot";
export { isInSlice, SLICE_BASIS_POINTS, slicePointOf } from "./staged-slice";
