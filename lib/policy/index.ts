/**
 * The policy model shared by the control plane and the enforcers: schemas, the scope grammar,
 * endpoint matching, resolution of layered limits, snapshot compilation and canonical export.
 * Pure: no I/O, no clock, no `node:*` import. See README.md.
 */

export { IPV6_SUBJECT_PREFIX_BITS, normalizeClientAddress } from "./address";
export { canonicalJson, canonicalPolicy, sortPolicyDocument } from "./canonical";
export {
  compileEndpointMatcher,
  type EndpointClassRules,
  type EndpointMatch,
  type EndpointMatcher,
  type MatchRule,
  matchEndpointClass,
} from "./endpoint-matcher";
export {
  type FieldPath,
  fieldErrorsFromZod,
  formatFieldErrors,
  formatFieldPath,
  type ParseResult,
  type PolicyFieldError,
} from "./errors";
export {
  checkIncidentGuardrails,
  DEFAULT_GUARDRAILS,
  formatDuration,
  type GuardrailSettings,
  type IncidentChange,
  type IncidentGuardrailOptions,
} from "./guardrails";
export {
  describeLimit,
  limitRatePerSec,
  limitSize,
  MAX_COST,
  MAX_LIMIT_COUNT,
  MAX_RATE_PER_SEC,
  MAX_WINDOW_MS,
  MIN_RATE_PER_SEC,
  scaleLimit,
} from "./limit-math";
export {
  CUSTOMER_ID_PATTERN,
  hasForbiddenCharacter,
  isCustomerId,
  isName,
  isRecordId,
  NAME_PATTERN,
  RECORD_ID_PATTERN,
} from "./names";
export { normalizeRequestPath, type PathPattern, parsePathPattern } from "./path-pattern";
export {
  diffPolicyRules,
  type FieldChange,
  type LimitChange,
  type LimitReachKind,
  limitAtScope,
  type OverrideHolder,
  outrankingHolders,
  outranksChange,
  type PolicyRules,
  type PolicyRulesDiff,
} from "./policy-diff";
export { type Layer, PreparedSnapshot, prepareSnapshot, type RuleSource } from "./prepare";
export {
  explainTrace,
  type Resolution,
  type ResolutionTrace,
  type ResolvedCheck,
  type ResolveOptions,
  type ResolveRequest,
  resolveLimits,
  type TraceRule,
  type TraceSlot,
  type TraceStatus,
} from "./resolve";
export {
  ALGORITHMS,
  CANDIDATE_TARGET_KINDS,
  findReplacedLimit,
  MAX_FACTOR,
  ON_STORE_FAILURE_DEFAULTS,
  parsePolicyDocument,
  SNAPSHOT_SCHEMA_VERSION,
  type TCeilings,
  type TCustomer,
  type TCustomerOverride,
  type TDryRunCandidate,
  type TEndpointClass,
  type TEndpointMatch,
  type TGuardrails,
  type TIncidentOverride,
  type TKeyBy,
  type TLimitSpec,
  type TOnStoreFailure,
  type TPolicyDocument,
  type TPolicyDocumentInput,
  type TPolicyLimit,
  type TPolicyMode,
  type TSnapshot,
  type TSnapshotPolicy,
  type TTier,
  ZCandidateTarget,
  ZCeilings,
  ZCustomer,
  ZCustomerId,
  ZCustomerOverride,
  ZDryRunCandidate,
  ZEndpointClass,
  ZEndpointMatch,
  ZGuardrails,
  ZIncidentOverride,
  ZInstant,
  ZKeyBy,
  ZLimitSpec,
  ZMethod,
  ZOnStoreFailure,
  ZPathPattern,
  ZPolicyDocument,
  ZPolicyLimit,
  ZPolicyMode,
  ZSnapshot,
  ZSnapshotPolicy,
  ZTicketUrl,
  ZTier,
} from "./schemas";
export {
  type Bucket,
  formatBucket,
  formatScope,
  formatSubject,
  parseBucket,
  parseScope,
  parseSubject,
  type Scope,
  type ScopeKind,
  type Subject,
} from "./scope";
export {
  type CompileSnapshotOptions,
  compileSnapshot,
  computeSnapshotChecksum,
  isNewerSnapshot,
  parseSnapshot,
} from "./snapshot";
