/**
 * Alert webhooks: the alerts the overview shows, POSTed as JSON to every URL in
 * ALERT_WEBHOOK_URLS, once per alert episode and URL (`AlertDelivery`).
 *
 * Each run, on the worker's leader:
 * 1. evaluates the alerts (`evaluateAlerts`, the overview's own evaluation);
 * 2. opens an episode per active alert and URL that has none open: a row inserted with
 *    `skipDuplicates` on (alertKey, url, episode), so a second worker or a restarted one finds
 *    the row instead of sending again. An alert that clears is marked resolved; if it returns
 *    within `quietMs` its episode reopens (no new message for a flapping scope), later it is a new
 *    episode, delivered again;
 * 2b. queues the change-request notices (change-request/queue-change-request-notices.ts) as
 *    deliveries of their own, sent like alerts;
 * 3. sends the due rows. Each is claimed first by a conditional update (status pending, due now)
 *    that also pushes `nextAttemptAt` ahead by a lease, so two senders never both claim it.
 *    A 2xx response delivers it; anything else records `lastError` and retries with exponential
 *    backoff until `maxAttempts`, then `failed`.
 *
 * At least once, not exactly once: a sender that dies after the receiver answered but before the
 * row is updated sends again when the lease ends. Every request carries the delivery's id in
 * `Limitplane-Delivery`, the same on every attempt, for receivers that deduplicate.
 */

import type { Clock } from "@limitplane/enforcer/limiter";
import type { PrismaClient } from "@/lib/generated/prisma/client";
import { queueChangeRequestNotices } from "../change-request/queue-change-request-notices";
import type { FleetDeps } from "../deps";
import { toJson } from "../stored";
import { MAX_WEBHOOK_ERROR_LENGTH, postWebhook } from "../webhooks/post-webhook";
import type { ConsoleAlert } from "./alert-rules";
import { evaluateAlerts } from "./evaluate-alerts";

export interface AlertWebhookDeps {
  readonly db: PrismaClient;
  /** Where the newest minutes are read live; null reads only the rolled-up rows. */
  readonly live: Pick<FleetDeps, "redis" | "prefix"> | null;
  /** Wall clock, ms. */
  readonly clock: Clock;
  /** @default globalThis.fetch */
  readonly fetch?: typeof fetch;
}

export interface AlertWebhookOptions {
  /** ALERT_WEBHOOK_URLS. */
  readonly urls: readonly string[];
  /** Deadline of one POST. @default 5_000 */
  readonly timeoutMs?: number;
  /** Attempts before a delivery is given up as `failed`. @default 10 */
  readonly maxAttempts?: number;
  /** Wait after the first failure, doubling after each. @default 5_000 */
  readonly retryBaseMs?: number;
  /** Longest wait between attempts. @default 600_000 (10 minutes) */
  readonly retryMaxMs?: number;
  /** An alert that returns within this long after clearing continues its episode. @default 900_000 */
  readonly quietMs?: number;
  /** Most deliveries sent per run. @default 50 */
  readonly batchSize?: number;
}

export interface AlertWebhookOutcome {
  /** Alerts active at this run. */
  readonly activeAlerts: number;
  /** Episodes opened (one per alert and URL). */
  readonly opened: number;
  readonly delivered: number;
  /** Attempts that failed (each will be retried, or was the last). */
  readonly failedAttempts: number;
  /** The earliest pending retry, epoch ms; null when nothing is pending. */
  readonly nextAttemptAtMs: number | null;
}

/** The body a receiver gets. */
export interface AlertWebhookPayload {
  readonly deliveryId: string;
  readonly alertKey: string;
  readonly episode: number;
  readonly alert: ConsoleAlert;
  /** When the alert was first seen in this episode. */
  readonly raisedAt: string;
}

const LEASE_MS = 60_000;

export async function deliverAlertWebhooks(
  deps: AlertWebhookDeps,
  options: AlertWebhookOptions,
): Promise<AlertWebhookOutcome> {
  const nowMs = deps.clock.nowMs();
  const urls = [...new Set(options.urls)];
  if (urls.length === 0) {
    return { activeAlerts: 0, opened: 0, delivered: 0, failedAttempts: 0, nextAttemptAtMs: null };
  }
  const { alerts } = await evaluateAlerts({ nowMs }, deps);
  const opened =
    (await syncEpisodes(deps.db, alerts, urls, nowMs, options.quietMs ?? 900_000)) +
    (await queueChangeRequestNotices(deps.db, urls, nowMs));
  const sent = await sendDue(deps, urls, nowMs, options);
  const next = await deps.db.alertDelivery.findFirst({
    where: { status: "pending", url: { in: urls } },
    orderBy: { nextAttemptAt: "asc" },
    select: { nextAttemptAt: true },
  });
  return {
    activeAlerts: alerts.length,
    opened,
    ...sent,
    nextAttemptAtMs: next?.nextAttemptAt.getTime() ?? null,
  };
}

async function syncEpisodes(
  db: PrismaClient,
  alerts: readonly ConsoleAlert[],
  urls: readonly string[],
  nowMs: number,
  quietMs: number,
): Promise<number> {
  const now = new Date(nowMs);
  const activeKeys = alerts.map((alert) => alert.key);
  // Alerts that cleared: their open episodes close (retries of what was already due go on).
  await db.alertDelivery.updateMany({
    where: { resolvedAt: null, alertKey: { notIn: activeKeys } },
    data: { resolvedAt: now },
  });
  if (alerts.length === 0) return 0;
  const existing = await db.alertDelivery.findMany({
    where: { alertKey: { in: activeKeys }, url: { in: [...urls] } },
    orderBy: { episode: "desc" },
    distinct: ["alertKey", "url"],
    select: { id: true, alertKey: true, url: true, episode: true, resolvedAt: true },
  });
  const latest = new Map(existing.map((row) => [`${row.alertKey}\n${row.url}`, row]));
  const toOpen: { alertKey: string; url: string; episode: number; payload: unknown }[] = [];
  const toReopen: bigint[] = [];
  for (const alert of alerts) {
    for (const url of urls) {
      const row = latest.get(`${alert.key}\n${url}`);
      if (row !== undefined && row.resolvedAt === null) continue;
      if (row?.resolvedAt != null && nowMs - row.resolvedAt.getTime() < quietMs) {
        toReopen.push(row.id);
        continue;
      }
      const episode = (row?.episode ?? 0) + 1;
      toOpen.push({ alertKey: alert.key, url, episode, payload: alert });
    }
  }
  if (toReopen.length > 0) {
    await db.alertDelivery.updateMany({
      where: { id: { in: toReopen } },
      data: { resolvedAt: null },
    });
  }
  if (toOpen.length === 0) return 0;
  const created = await db.alertDelivery.createMany({
    data: toOpen.map((row) => ({
      alertKey: row.alertKey,
      url: row.url,
      episode: row.episode,
      // The delivery id is added when sending: the row's id does not exist yet.
      payload: toJson({
        alertKey: row.alertKey,
        episode: row.episode,
        alert: row.payload,
        raisedAt: now.toISOString(),
      }),
      nextAttemptAt: now,
      createdAt: now,
    })),
    skipDuplicates: true,
  });
  return created.count;
}

function retryDelayMs(attempts: number, options: AlertWebhookOptions): number {
  const baseMs = options.retryBaseMs ?? 5_000;
  const maxMs = options.retryMaxMs ?? 600_000;
  return Math.min(maxMs, baseMs * 2 ** Math.min(Math.max(0, attempts - 1), 30));
}

async function sendDue(
  deps: AlertWebhookDeps,
  urls: readonly string[],
  nowMs: number,
  options: AlertWebhookOptions,
): Promise<{ delivered: number; failedAttempts: number }> {
  const now = new Date(nowMs);
  const maxAttempts = options.maxAttempts ?? 10;
  const due = await deps.db.alertDelivery.findMany({
    where: { status: "pending", nextAttemptAt: { lte: now }, url: { in: [...urls] } },
    orderBy: [{ nextAttemptAt: "asc" }, { id: "asc" }],
    take: options.batchSize ?? 50,
    select: { id: true, url: true, payload: true, attempts: true },
  });
  let delivered = 0;
  let failedAttempts = 0;
  for (const row of due) {
    const claimed = await deps.db.alertDelivery.updateMany({
      where: { id: row.id, status: "pending", nextAttemptAt: { lte: now } },
      data: { attempts: { increment: 1 }, nextAttemptAt: new Date(nowMs + LEASE_MS) },
    });
    if (claimed.count === 0) continue;
    const attempts = row.attempts + 1;
    const error = await post(deps, row.url, row.id, row.payload, options.timeoutMs ?? 5_000);
    if (error === null) {
      delivered++;
      await deps.db.alertDelivery.update({
        where: { id: row.id },
        data: { status: "delivered", deliveredAt: new Date(deps.clock.nowMs()), lastError: null },
      });
      continue;
    }
    failedAttempts++;
    const isLast = attempts >= maxAttempts;
    await deps.db.alertDelivery.update({
      where: { id: row.id },
      data: {
        status: isLast ? "failed" : "pending",
        lastError: error.slice(0, MAX_WEBHOOK_ERROR_LENGTH),
        nextAttemptAt: new Date(deps.clock.nowMs() + retryDelayMs(attempts, options)),
      },
    });
  }
  return { delivered, failedAttempts };
}

/** One POST of a stored delivery, its id added to the body. */
function post(
  deps: AlertWebhookDeps,
  url: string,
  id: bigint,
  stored: unknown,
  timeoutMs: number,
): Promise<string | null> {
  const body =
    typeof stored === "object" && stored !== null
      ? { deliveryId: id.toString(), ...stored }
      : { deliveryId: id.toString(), alert: stored };
  return postWebhook({
    url,
    body: JSON.stringify(body),
    deliveryId: id.toString(),
    userAgent: "limitplane-alerts",
    timeoutMs,
    fetch: deps.fetch,
  });
}
