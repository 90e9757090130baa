/**
 * `@limitplane/enforcer/recording`: the traffic record. Enforcers append each decision to a
 * bounded buffer and write compact batches to a Redis Stream per gateway off the decision path
 * (`TrafficRecorder`); the control plane's worker moves them into Postgres and its backtest
 * decodes them (`decodeTrafficBatch`). See README.md ("The traffic record").
 */

export { mergeTrafficBatches, TrafficBatchBuilder } from "./traffic-batch-builder";
export {
  decodeTrafficBatch,
  encodeTrafficBatch,
  FLAG_ALLOWED,
  FLAG_LOCAL_STAGE,
  FLAG_NO_POLICY,
  FLAG_STORE_TIME,
  FLAG_WITHOUT_STORE,
  NO_BINDING,
  TRAFFIC_BATCH_FORMAT,
  type TrafficBatch,
  type TrafficProfile,
} from "./traffic-batch-codec";
export {
  type DecisionRecord,
  type DecisionRecorder,
  isSampledSubject,
  recordedSubjectOf,
  TrafficRecorder,
  type TrafficRecordingOptions,
  type TrafficRecordingRedis,
  trafficRecordNames,
} from "./traffic-recorder";
