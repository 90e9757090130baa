/**
 * The audit webhook's settings: the URL every audit entry is POSTed to, and the secret that signs
 * each POST. One row, absent until first saved. docs/audit-webhook.md.
 */
import { randomBytes } from "node:crypto";
import { z } from "zod";
import {
  type AuditedChangeDeps,
  type AuditReceipt,
  runAuditedChange,
} from "../audit/run-audited-change";
import { type ChangeContext, parseChange } from "../change-context";
import { validationError } from "../errors";
import { AUDIT_WEBHOOK_TOPIC } from "../outbox/outbox";
import { type Db, isoOf } from "../stored";
import { type VersionedEntity, versionedWrite } from "../versioned-write";
import { webhookUrlProblem } from "../webhooks/webhook-target";

/** The settings as the API and the console show them: never the secret. */
export interface AuditWebhookSettingsRecord {
  /** Null: no webhook. */
  readonly url: string | null;
  readonly hasSigningSecret: boolean;
  /** 0 before the settings were first saved. */
  readonly version: number;
  readonly createdAt: string | null;
  readonly updatedAt: string | null;
}

/** What the worker needs to send: the URL and the secret. */
export interface AuditWebhookTarget {
  readonly url: string;
  readonly signingSecret: string;
}

const recordSelect = { url: true, version: true, createdAt: true, updatedAt: true } as const;

/** The settings as stored, or none (version 0) when never saved. */
export async function findAuditWebhookSettings(db: Db): Promise<AuditWebhookSettingsRecord> {
  const row = await db.auditWebhookSettings.findUnique({ where: { id: 1 }, select: recordSelect });
  if (row === null) {
    return { url: null, hasSigningSecret: false, version: 0, createdAt: null, updatedAt: null };
  }
  return {
    url: row.url,
    hasSigningSecret: true,
    version: row.version,
    createdAt: isoOf(row.createdAt),
    updatedAt: isoOf(row.updatedAt),
  };
}

/** Where audit entries go now, with the signing secret; null when no webhook is set. */
export async function findAuditWebhookTarget(db: Db): Promise<AuditWebhookTarget | null> {
  const row = await db.auditWebhookSettings.findUnique({
    where: { id: 1 },
    select: { url: true, signingSecret: true },
  });
  return row?.url == null ? null : { url: row.url, signingSecret: row.signingSecret };
}

/**
 * The URL as the audit log records it: scheme, host, port and path. A query string or fragment
 * often carries a receiver's token, so it is left out.
 */
export function auditedWebhookUrl(url: string | null): string | null {
  if (url === null || !URL.canParse(url)) return null;
  const parsed = new URL(url);
  return `${parsed.origin}${parsed.pathname}${parsed.search === "" ? "" : "?…"}`;
}

function settingsEntity(): VersionedEntity<AuditWebhookSettingsRecord> {
  return {
    find: (tx) => findAuditWebhookSettings(tx),
    entityType: "audit-webhook",
    entityId: "audit-webhook",
    label: "the audit webhook",
    view: ({ url, version }) => ({ url: auditedWebhookUrl(url), version }),
  };
}

export const ZUpdateAuditWebhookOptions = z.strictObject({
  /** Where every audit entry is POSTed from now on; null turns the webhook off. */
  url: z
    .string({ error: "url must be an https:// or http:// URL, or null to turn the webhook off" })
    .trim()
    .min(1, { error: "url is empty; give a URL, or null to turn the webhook off" })
    .max(2_048, { error: "url must be at most 2048 characters" })
    .nullable(),
  /** A new signing secret even though one exists (the old one stops working at once). */
  rotateSigningSecret: z.boolean({ error: "rotateSigningSecret must be true or false" }).optional(),
  /** 0 before the settings were first saved. */
  expectedVersion: z
    .number({ error: "expectedVersion is required: the version of the settings you read" })
    .int({ error: "expectedVersion must be a whole number" })
    .min(0, { error: "expectedVersion must be at least 0" })
    .max(2_147_483_647, { error: "expectedVersion is too large" }),
});
export type UpdateAuditWebhookOptions = z.input<typeof ZUpdateAuditWebhookOptions>;

export interface AuditWebhookDeps extends AuditedChangeDeps {
  /** WEBHOOK_PRIVATE_ADDRESSES=allow: a URL may point at a loopback or private address. */
  readonly isPrivateAddressAllowed: boolean;
}

export interface UpdatedAuditWebhook extends AuditReceipt {
  readonly settings: AuditWebhookSettingsRecord;
  /** The new signing secret, shown this once; null when the secret was kept. */
  readonly signingSecret: string | null;
}

function newSigningSecret(): string {
  return `whsec_${randomBytes(32).toString("base64url")}`;
}

/**
 * Sets, changes or turns off the audit webhook. A secret is generated with the first URL and on
 * `rotateSigningSecret`, and returned once. Turning it off drops the entries still waiting to be
 * sent. The change's own audit entry is the first one sent to a new URL.
 */
export async function updateAuditWebhook(
  options: UpdateAuditWebhookOptions,
  context: ChangeContext,
  deps: AuditWebhookDeps,
): Promise<UpdatedAuditWebhook> {
  const { input, ctx } = parseChange(ZUpdateAuditWebhookOptions, options, context);
  const problem =
    input.url === null ? null : webhookUrlProblem(input.url, deps.isPrivateAddressAllowed);
  if (problem !== null) throw validationError([{ path: "url", message: `url ${problem}` }]);
  return runAuditedChange(deps, ctx, {
    action: "audit-webhook.update",
    entityType: "audit-webhook",
    write: versionedWrite(settingsEntity(), input.expectedVersion, async (tx, current) => {
      const isNewSecret = !current.hasSigningSecret || input.rotateSigningSecret === true;
      const signingSecret = isNewSecret ? newSigningSecret() : null;
      const row = await tx.auditWebhookSettings.upsert({
        where: { id: 1 },
        create: { id: 1, url: input.url, signingSecret: signingSecret ?? newSigningSecret() },
        update: {
          url: input.url,
          ...(signingSecret === null ? {} : { signingSecret }),
          version: { increment: 1 },
        },
        select: recordSelect,
      });
      if (input.url === null) {
        await tx.outboxEvent.deleteMany({
          where: { topic: AUDIT_WEBHOOK_TOPIC, publishedAt: null },
        });
      }
      const settings: AuditWebhookSettingsRecord = {
        url: row.url,
        hasSigningSecret: true,
        version: row.version,
        createdAt: isoOf(row.createdAt),
        updatedAt: isoOf(row.updatedAt),
      };
      return {
        after: {
          url: auditedWebhookUrl(row.url),
          isSigningSecretNew: isNewSecret,
          version: row.version,
        },
        value: { settings, signingSecret },
      };
    }),
  });
}
