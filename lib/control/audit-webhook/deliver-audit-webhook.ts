/**
 * Sends the audit webhook's queued entries (`audit.webhook` outbox rows, written by
 * `writeAuditEntry` in each entry's own transaction), in id order, which is the order the entries
 * were committed: the audit-chain lock is held from the entry's id to the commit.
 *
 * Each run, on the worker's leader:
 * 1. reads the oldest unsent row; if its retry is not due yet, stops there (nothing after it is
 *    sent first, so the receiver sees the log in order);
 * 2. claims it by a conditional update that also pushes `nextAttemptAt` ahead by a lease, so two
 *    senders never both send it;
 * 3. POSTs the entry with its sentence (summarize-audit-entry.ts), signed (webhook-signature.ts);
 *    a 2xx marks it sent (`publishedAt`); anything else records `lastError` and retries it with
 *    exponential backoff, never giving up: a receiver that comes back gets everything it missed.
 *
 * At least once: a sender that dies after the receiver answered and before the row is marked
 * sends it again when the lease ends, with the same `Limitplane-Delivery` (the entry's id).
 */
import type { Clock } from "@limitplane/enforcer/limiter";
import type { PrismaClient } from "@/lib/generated/prisma/client";
import {
  type AuditEntryRecord,
  auditSelect,
  toAuditEntryRecord,
} from "../audit/list-audit-entries";
import { summarizeAuditEntry } from "../audit/summarize-audit-entry";
import { AUDIT_WEBHOOK_TOPIC, ZAuditWebhookPayload } from "../outbox/outbox";
import { backoffDelayMs } from "../outbox/publish-pending-snapshots";
import { MAX_WEBHOOK_ERROR_LENGTH, postWebhook } from "../webhooks/post-webhook";
import { SIGNATURE_HEADER, signWebhookBody } from "../webhooks/webhook-signature";
import { type ResolveHost, webhookTargetProblem } from "../webhooks/webhook-target";
import { findAuditWebhookTarget } from "./audit-webhook-settings";

export interface DeliverAuditWebhookDeps {
  readonly db: PrismaClient;
  /** Wall clock, ms: the signature's time and the retry times. */
  readonly clock: Clock;
  /** @default globalThis.fetch */
  readonly fetch?: typeof fetch;
  /** @default DNS (webhook-target.ts) */
  readonly resolveHost?: ResolveHost;
}

export interface DeliverAuditWebhookOptions {
  /** WEBHOOK_PRIVATE_ADDRESSES=allow. @default false */
  readonly isPrivateAddressAllowed?: boolean;
  /** Deadline of one POST. @default 5_000 */
  readonly timeoutMs?: number;
  /** Wait after the first failure, doubling after each. @default 1_000 */
  readonly retryBaseMs?: number;
  /** Longest wait between attempts. @default 300_000 (5 minutes) */
  readonly retryMaxMs?: number;
  /** Most entries sent per run. @default 100 */
  readonly batchSize?: number;
}

export interface DeliverAuditWebhookOutcome {
  readonly delivered: number;
  /** Attempts that failed (each will be retried). */
  readonly failedAttempts: number;
  /** The last failure's words, for the log; null when none failed. */
  readonly lastError: string | null;
  /** True when entries are due now (the batch was full). */
  readonly hasMore: boolean;
  /** When the oldest waiting entry may be retried, epoch ms; null when none waits. */
  readonly nextAttemptAtMs: number | null;
}

/** The body a receiver gets. */
export interface AuditWebhookBody {
  /** The audit entry's id, also in `Limitplane-Delivery`: the same on every attempt. */
  readonly deliveryId: string;
  readonly type: "audit.entry";
  readonly entry: AuditEntryRecord & { readonly summary: string };
}

/** How long a claimed entry is held by its sender before another may send it. */
const LEASE_MS = 60_000;

export async function deliverAuditWebhook(
  deps: DeliverAuditWebhookDeps,
  options: DeliverAuditWebhookOptions = {},
): Promise<DeliverAuditWebhookOutcome> {
  const idle = { delivered: 0, failedAttempts: 0, lastError: null, hasMore: false };
  const target = await findAuditWebhookTarget(deps.db);
  if (target === null) return { ...idle, nextAttemptAtMs: null };
  const timeoutMs = options.timeoutMs ?? 5_000;
  const batchSize = options.batchSize ?? 100;
  let delivered = 0;
  let addressProblem: string | null | undefined;
  for (;;) {
    const nowMs = deps.clock.nowMs();
    const row = await deps.db.outboxEvent.findFirst({
      where: { topic: AUDIT_WEBHOOK_TOPIC, publishedAt: null },
      orderBy: { id: "asc" },
      select: { id: true, payload: true, attempts: true, nextAttemptAt: true },
    });
    if (row === null) return { ...idle, delivered, nextAttemptAtMs: null };
    if (row.nextAttemptAt.getTime() > nowMs) {
      return { ...idle, delivered, nextAttemptAtMs: row.nextAttemptAt.getTime() };
    }
    if (delivered >= batchSize)
      return { ...idle, delivered, hasMore: true, nextAttemptAtMs: nowMs };
    const claimed = await deps.db.outboxEvent.updateMany({
      where: { id: row.id, publishedAt: null, nextAttemptAt: row.nextAttemptAt },
      data: { attempts: { increment: 1 }, nextAttemptAt: new Date(nowMs + LEASE_MS) },
    });
    // Another sender has it: it goes on from here.
    if (claimed.count === 0) return { ...idle, delivered, nextAttemptAtMs: nowMs + LEASE_MS };
    const attempts = row.attempts + 1;
    // Resolved once per run: a name that turned private stops the sending until it is fixed.
    addressProblem ??= await webhookTargetProblem(
      target.url,
      options.isPrivateAddressAllowed ?? false,
      deps.resolveHost,
    );
    const error =
      addressProblem === null
        ? await send(deps, target, row.payload, timeoutMs)
        : `not sent: the URL ${addressProblem}`;
    if (error === null) {
      delivered++;
      await deps.db.outboxEvent.update({
        where: { id: row.id },
        data: { publishedAt: new Date(deps.clock.nowMs()), lastError: null },
        select: { id: true },
      });
      continue;
    }
    const retryAtMs =
      deps.clock.nowMs() +
      backoffDelayMs(attempts, {
        initialMs: options.retryBaseMs ?? 1_000,
        maxMs: options.retryMaxMs ?? 300_000,
      });
    await deps.db.outboxEvent.update({
      where: { id: row.id },
      data: {
        lastError: error.slice(0, MAX_WEBHOOK_ERROR_LENGTH),
        nextAttemptAt: new Date(retryAtMs),
      },
      select: { id: true },
    });
    return {
      delivered,
      failedAttempts: 1,
      lastError: error,
      hasMore: false,
      nextAttemptAtMs: retryAtMs,
    };
  }
}

/** POSTs one queued entry; null when the receiver took it. */
async function send(
  deps: DeliverAuditWebhookDeps,
  target: { readonly url: string; readonly signingSecret: string },
  payload: unknown,
  timeoutMs: number,
): Promise<string | null> {
  const { auditEntryId } = ZAuditWebhookPayload.parse(payload);
  const row = await deps.db.auditEntry.findUnique({
    where: { id: BigInt(auditEntryId) },
    select: auditSelect,
  });
  // Entries are never deleted (the table refuses it): a missing one is a broken database.
  if (row === null) throw new Error(`audit entry ${auditEntryId} is queued but does not exist`);
  const entry = toAuditEntryRecord(row);
  const body: AuditWebhookBody = {
    deliveryId: entry.id,
    type: "audit.entry",
    entry: { ...entry, summary: summarizeAuditEntry(entry) },
  };
  const text = JSON.stringify(body);
  return postWebhook({
    url: target.url,
    body: text,
    deliveryId: entry.id,
    userAgent: "limitplane-audit-webhook",
    headers: {
      [SIGNATURE_HEADER]: signWebhookBody(
        target.signingSecret,
        Math.floor(deps.clock.nowMs() / 1_000),
        text,
      ),
    },
    timeoutMs,
    fetch: deps.fetch,
  });
}
