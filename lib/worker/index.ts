/** The worker: leader election, the job loop, and the jobs. See worker.ts and lib/control/README.md. */
export { type AlertWebhooksJobOptions, alertWebhooksJob } from "./jobs/alert-webhooks-job";
export { type AuditWebhookJobOptions, auditWebhookJob } from "./jobs/audit-webhook-job";
export {
  type ExpireChangeRequestsJobOptions,
  expireChangeRequestsJob,
} from "./jobs/expire-change-requests-job";
export { type PublishSnapshotsJobOptions, publishSnapshotsJob } from "./jobs/publish-snapshots-job";
export {
  type RecordIncidentExpiriesJobOptions,
  recordIncidentExpiriesJob,
} from "./jobs/record-incident-expiries-job";
export { type RollUpMetricsJobOptions, rollUpMetricsJob } from "./jobs/roll-up-metrics-job";
export { createStandardJobs, type StandardJobsOptions } from "./standard-jobs";
export { startWorker, type Worker, type WorkerOptions } from "./worker";
export type { WorkerJob } from "./worker-job";
