/**
 * `@limitplane/enforcer/publication`: the Redis protocol between the control plane and the
 * enforcers. The key names, the newer-only publication of deltas and snapshots (control plane),
 * the validated reads of the head, the log and a binary snapshot, and announcement parsing
 * (enforcers), the one protocol version both sides check (`REDIS_PROTOCOL_VERSION`), the readers
 * of what enforcers report (heartbeats, per-scope counts, recent rejections, the per-minute
 * rejection tally), and the one Redis client factory with a role per use. The key
 * layout is in docs/redis-store.md; lib/control/README.md has the guarantees.
 */
export {
  type EnforcerHeartbeat,
  type HeartbeatsRead,
  type PublishedVersion,
  type RecentRejection,
  type RedisFailoverRecord,
  type ReportReadingRedis,
  readEnforcerHeartbeats,
  readRecentRejections,
  readRedisFailovers,
} from "./enforcer-reports";
export {
  formatGlobalShare,
  type GlobalBudgetRedisNames,
  globalBudgetRedisNames,
  parseGlobalShare,
  type TGlobalShareValue,
} from "./global-budget-keys";
export { type PolicyRedisNames, policyRedisNames } from "./keys";
export {
  type DecisionMinuteCounts,
  type MetricsReadingRedis,
  readDecisionMinute,
  readScopeMinute,
  type ScopeMinuteCounts,
  scopeMinuteCountsOf,
} from "./metrics-reader";
export {
  type OutboundMinuteCounts,
  type OutboundMinuteReadingRedis,
  parseOutboundCounts,
  readOutboundMinute,
  WAIT_BUCKET_COUNT,
  waitBucketOf,
  waitBucketUpperMs,
} from "./outbound-minutes";
export {
  checkRedisProtocol,
  type ProtocolReader,
  type ProtocolReadingRedis,
  REDIS_PROTOCOL_VERSION,
  RedisProtocolError,
} from "./protocol";
export {
  type DeltaPublishResult,
  type DeltaToPublish,
  MAX_INLINE_DELTA_BYTES,
  type PolicyPublishingRedis,
  publishPolicyDelta,
  publishPolicySnapshot,
  type SnapshotPublishResult,
  type SnapshotToPublish,
} from "./publish-policy";
export {
  loadPolicySnapshot,
  type PolicyAnnouncement,
  type PolicyHead,
  type PolicyHeadRead,
  type PolicyReadingRedis,
  parsePolicyAnnouncement,
  readPolicyDeltas,
  readPolicyHead,
  readPolicyHeadVersion,
  type SnapshotLoad,
} from "./read-policy";
export {
  type CreateRedisOptions,
  clusterOptionsFor,
  createRedisClient,
  type RedisClient,
  type RedisClusterNode,
  type RedisRole,
  type RedisSentinelOptions,
  redisOptionsFor,
} from "./redis-clients";
export { type EnforcerRedisNames, enforcerRedisNames, scopeField } from "./redis-keys";
export {
  ANONYMOUS_TALLY_ID,
  REJECTION_TALLY_KEPT,
  type RejectionTallyEntry,
  type RejectionTallyReadingRedis,
  readRejectionTally,
  rejectionTallyKey,
} from "./rejection-tally";
export {
  NO_TIER_FIELD,
  type ReportedTier,
  readSeenCustomer,
  readSeenCustomerIds,
  readSeenOverflow,
  SEEN_CUSTOMERS_KEPT,
  SEEN_RETENTION_MS,
  type SeenCustomer,
  type SeenCustomerNames,
  type SeenReadingRedis,
  seenCustomerNames,
} from "./seen-customers";
