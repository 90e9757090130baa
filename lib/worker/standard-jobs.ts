/**
 * The jobs every worker runs, in one place, for the worker process (`npm run worker`) and for the
 * console when it hosts them itself (the embedded database: LIMITPLANE_WORKER=in-process).
 */

import type { RedisClient } from "@limitplane/enforcer/publication";
import type { PrismaClient } from "@/lib/generated/prisma/client";
import { systemClock } from "@/lib/server/composition";
import { loadEnv } from "@/lib/server/env";
import { alertWebhooksJob } from "./jobs/alert-webhooks-job";
import { auditWebhookJob } from "./jobs/audit-webhook-job";
import { expireChangeRequestsJob } from "./jobs/expire-change-requests-job";
import { moveTrafficRecordJob } from "./jobs/move-traffic-record-job";
import { publishSnapshotsJob } from "./jobs/publish-snapshots-job";
import { reconcileGlobalBudgetsJob } from "./jobs/reconcile-global-budgets-job";
import { recordIncidentExpiriesJob } from "./jobs/record-incident-expiries-job";
import { rollUpMetricsJob } from "./jobs/roll-up-metrics-job";
import { superviseStagedChangesJob } from "./jobs/supervise-staged-changes-job";
import type { WorkerJob } from "./worker-job";

export interface StandardJobsOptions {
  readonly db: PrismaClient;
  /** A `control` client from lib/server/redis.ts. */
  readonly redis: RedisClient;
  /** REDIS_KEY_PREFIX. */
  readonly prefix: string;
  /** @default console.log */
  readonly log?: (line: string) => void;
  /** Days of per-minute decision counts kept in Postgres. @default METRICS_RETENTION_DAYS (30) */
  readonly metricsRetentionDays?: number;
  /** Hours of the traffic record kept. @default TRAFFIC_RECORD_RETENTION_HOURS (48) */
  readonly trafficRecordRetentionHours?: number;
  /** WEBHOOK_PRIVATE_ADDRESSES=allow: the audit webhook may point at a private address. */
  readonly isPrivateWebhookAllowed?: boolean;
  /** Where alerts are POSTed. @default ALERT_WEBHOOK_URLS (none) */
  readonly alertWebhookUrls?: readonly string[];
  /**
   * REGIONS: a `control` client per region. Set, every version is published to every region by a
   * job of its own (`redis` is then the first region's, for the jobs that read one Redis).
   * @default none: one Redis
   */
  readonly regions?: readonly { readonly name: string; readonly redis: RedisClient }[];
}

export function createStandardJobs(options: StandardJobsOptions): WorkerJob[] {
  const { db, redis, prefix } = options;
  const log = options.log ?? ((line: string) => console.log(line));
  const regions = options.regions ?? [];
  const allRegions = regions.map((region) => region.name);
  let lastUnreachable = "";
  const publishers =
    regions.length === 0
      ? [{ db, redis, prefix, clock: systemClock }]
      : regions.map((region) => ({
          db,
          redis: region.redis,
          prefix,
          clock: systemClock,
          region: region.name,
          allRegions,
        }));
  return [
    ...publishers.map((publisher) =>
      publishSnapshotsJob({
        publisher,
        onDrain(outcome) {
          const to = "region" in publisher ? ` to ${publisher.region}` : "";
          if (outcome.status === "published" && outcome.versions.length > 0) {
            const versions = outcome.versions.map((published) => published.version);
            log(`worker: published policy version ${versions.join(", ")}${to}`);
          } else if (outcome.status === "failed") {
            log(
              `worker: publishing${to} failed (${outcome.error}); retrying at ${new Date(outcome.retryAtMs).toISOString()}`,
            );
          }
        },
        onRepublish(outcome) {
          if (outcome.status === "republished") {
            const to = "region" in publisher ? ` to ${publisher.region}` : "";
            log(
              `worker: Redis${to} had ${outcome.redisHad === null ? "no policy" : `version ${outcome.redisHad}`}; published version ${outcome.version} again`,
            );
          }
        },
      }),
    ),
    recordIncidentExpiriesJob({
      deps: { db, publisher: null, clock: systemClock, auditKey: loadEnv().AUDIT_KEY },
      onRecorded: (ids) => log(`worker: recorded the expiry of ${ids.join(", ")}`),
    }),
    expireChangeRequestsJob({
      deps: { db, clock: systemClock, auditKey: loadEnv().AUDIT_KEY },
      onExpired: (count) => log(`worker: ${count} change requests expired`),
    }),
    // Each region's counts are rolled up from its own Redis, under its name.
    ...(regions.length === 0 ? [{ name: "", redis }] : regions).map((region) =>
      rollUpMetricsJob({
        deps: { db, redis: region.redis, prefix, clock: systemClock, region: region.name },
        retentionDays: options.metricsRetentionDays ?? loadEnv().METRICS_RETENTION_DAYS,
        onRolledUp(result) {
          if (result.rowsDeleted > 0) {
            log(`worker: deleted ${result.rowsDeleted} per-minute metric rows past the retention`);
          }
        },
      }),
    ),
    // Global limits divided among the regions (one Redis: the whole limit to it).
    reconcileGlobalBudgetsJob({
      deps: {
        db,
        regions: regions.length === 0 ? [{ name: "default", redis }] : regions,
        prefix,
        clock: systemClock,
      },
      settings: {
        intervalMs: loadEnv().GLOBAL_BUDGET_INTERVAL_MS,
        leaseMs: loadEnv().GLOBAL_BUDGET_LEASE_MS,
        skewMs: loadEnv().GLOBAL_BUDGET_SKEW_MS,
        applyMs: loadEnv().GLOBAL_BUDGET_APPLY_MS,
        floorShare: loadEnv().GLOBAL_BUDGET_FLOOR_SHARE,
      },
      onRound(round) {
        // Said when the set of unreachable regions changes, not every round.
        const said = round.unreachable.join(", ");
        if (said !== lastUnreachable) {
          log(
            said === ""
              ? "worker: global budgets: every region answers"
              : `worker: global budgets: ${said} unreachable; its shares frozen until their leases end`,
          );
          lastUnreachable = said;
        }
      },
    }),
    moveTrafficRecordJob({
      deps: { db, redis, prefix, clock: systemClock },
      retentionHours:
        options.trafficRecordRetentionHours ?? loadEnv().TRAFFIC_RECORD_RETENTION_HOURS,
      onMoved(result) {
        if (result.gapsFound > 0) {
          log(
            `worker: traffic record: ${result.gapsFound} gateway streams lost entries before they were moved`,
          );
        }
      },
    }),
    superviseStagedChangesJob({
      deps: {
        db,
        publisher: { db, redis, prefix, clock: systemClock },
        clock: systemClock,
        auditKey: loadEnv().AUDIT_KEY,
        live: { redis, prefix },
      },
      onRun(outcomes) {
        for (const outcome of outcomes) {
          if (
            outcome.action !== "wait" &&
            outcome.action !== "held" &&
            outcome.action !== "baseline"
          ) {
            log(`worker: staged change ${outcome.id}: ${outcome.action}`);
          }
        }
      },
    }),
    auditWebhookJob({
      deps: { db, clock: systemClock },
      isPrivateAddressAllowed:
        options.isPrivateWebhookAllowed ?? loadEnv().WEBHOOK_PRIVATE_ADDRESSES === "allow",
      onRun(outcome) {
        // Counts and the receiver's answer only: the URL may carry a token.
        if (outcome.failedAttempts > 0) {
          log(
            `worker: audit webhook: ${outcome.delivered} sent, then failed (${outcome.lastError}); retrying`,
          );
        }
      },
    }),
    alertWebhooksJob({
      deps: { db, live: { redis, prefix }, clock: systemClock },
      urls: options.alertWebhookUrls ?? loadEnv().ALERT_WEBHOOK_URLS,
      onRun(outcome) {
        // Counts only: a webhook URL may carry a token, so it is never logged.
        if (outcome.opened > 0 || outcome.delivered > 0 || outcome.failedAttempts > 0) {
          log(
            `worker: alerts: ${outcome.opened} new deliveries, ${outcome.delivered} delivered, ${outcome.failedAttempts} failed attempts`,
          );
        }
      },
    }),
  ];
}
