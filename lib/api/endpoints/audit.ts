import { z } from "zod";
import { AUDIT_ACTIONS, AUDIT_ENTITY_TYPES } from "@/lib/control/audit/audit-actions";
import { listAuditEntries, ZListAuditEntriesOptions } from "@/lib/control/audit/list-audit-entries";
import { verifyAuditChain } from "@/lib/control/audit/verify-audit-chain";
import {
  findAuditWebhookSettings,
  updateAuditWebhook,
  ZUpdateAuditWebhookOptions,
} from "@/lib/control/audit-webhook/audit-webhook-settings";
import { ACTOR_TYPES } from "@/lib/control/change-context";
import { authDeps, controlDeps } from "@/lib/server/composition";
import { loadEnv } from "@/lib/server/env";
import { defineEndpoint } from "../endpoint";
import {
  changeContextOf,
  queryInt,
  strictBody,
  strictParams,
  ZAuditReceipt,
  ZReason,
} from "./shared";

const options = ZListAuditEntriesOptions.shape;

export const ZAuditEntry = z.object({
  id: z.string(),
  at: z.string(),
  actor: z.object({ type: z.enum(ACTOR_TYPES), id: z.string().nullable(), name: z.string() }),
  action: z.enum(AUDIT_ACTIONS),
  entityType: z.enum(AUDIT_ENTITY_TYPES),
  entityId: z.string(),
  customerId: z.string().nullable(),
  before: z.unknown(),
  after: z.unknown(),
  reason: z.string(),
  requestId: z.string().nullable(),
  policyVersion: z.number().int().nullable(),
});

export const listAuditEntriesEndpoint = defineEndpoint({
  method: "GET",
  path: "/api/v1/audit",
  summary: "The audit log, newest first, filtered and keyset-paged",
  description:
    "Filters combine: actor (`actorId`, `actorType`), `action`, entity (`entityType`, and `entityId` with it), `customerId`, and the time range [`from`, `to`). Pass `nextCursor` as `cursor` for the next (older) page, or `previousCursor` as `before` for the previous (newer) one; a deep page costs what the first does.",
  tag: "Audit log",
  access: "audit.read",
  query: strictParams({
    actorId: options.actorId,
    actorType: options.actorType,
    action: options.action,
    entityType: options.entityType,
    entityId: options.entityId,
    customerId: options.customerId,
    from: options.from,
    to: options.to,
    cursor: options.cursor,
    before: options.before,
    limit: queryInt("limit", 1, 200).optional(),
  }),
  response: z.object({
    entries: z.array(ZAuditEntry).readonly(),
    nextCursor: z.string().nullable(),
    previousCursor: z
      .string()
      .nullable()
      .describe("Pass as `before` for the newer page; null on the first page."),
  }),
  handle: ({ query }) => listAuditEntries(query, controlDeps()),
});

export const ZAuditChainVerification = z.object({
  isWhole: z.boolean().describe("True when every chained entry verified."),
  entriesVerified: z.number().int(),
  entriesBeforeChain: z
    .number()
    .int()
    .describe("Entries written before the chain existed: counted, not judged."),
  head: z
    .object({ entryId: z.string(), chainHash: z.string() })
    .nullable()
    .describe(
      "The last entry that verified. Note it: a later check that no longer reaches it shows entries were removed from the end.",
    ),
  firstBreak: z
    .object({
      entryId: z.string(),
      problem: z.enum(["altered", "unsigned", "unchained"]),
      message: z.string(),
    })
    .nullable(),
});

export const verifyAuditChainEndpoint = defineEndpoint({
  method: "GET",
  path: "/api/v1/audit/verification",
  summary: "Whether the audit log's hash chain is whole, and the first entry where it is not",
  description:
    "Reads the whole log in id order and checks each entry's chain hash (its content and the previous entry's hash) and its MAC under AUDIT_KEY. `altered`: changed after it was written, or an entry before it was removed; `unsigned`: written without the key; `unchained`: no hash after the chain started. What this proves: docs/audit-chain.md.",
  tag: "Audit log",
  access: "audit.read",
  response: ZAuditChainVerification,
  handle: () => verifyAuditChain(controlDeps()),
});

export const ZAuditWebhookSettings = z.object({
  url: z.string().nullable().describe("Where every audit entry is POSTed; null: no webhook."),
  hasSigningSecret: z.boolean(),
  version: z.number().int().describe("0 until first saved; send it back as expectedVersion."),
  createdAt: z.string().nullable(),
  updatedAt: z.string().nullable(),
});

export const getAuditWebhookEndpoint = defineEndpoint({
  method: "GET",
  path: "/api/v1/audit-webhook",
  summary: "The webhook every audit entry is sent to",
  description:
    "Admins only: the URL may carry the receiver's token. The signing secret is never shown.",
  tag: "Audit log",
  access: "settings.write",
  response: z.object({ settings: ZAuditWebhookSettings }),
  handle: async () => ({ settings: await findAuditWebhookSettings(controlDeps().db) }),
});

export const updateAuditWebhookEndpoint = defineEndpoint({
  method: "PUT",
  path: "/api/v1/audit-webhook",
  summary: "Set, change or turn off the webhook every audit entry is sent to",
  description:
    "Every audit entry from then on is POSTed to `url` by the worker, in order, at least once, signed with HMAC-SHA256 in `Limitplane-Signature` (docs/audit-webhook.md). A signing secret is generated with the first URL and on `rotateSigningSecret`, and returned once as `signingSecret`. `url: null` turns it off and drops the entries not yet sent. A loopback, private or link-local address is refused unless WEBHOOK_PRIVATE_ADDRESSES=allow.",
  tag: "Audit log",
  access: "settings.write",
  body: strictBody({ ...ZUpdateAuditWebhookOptions.shape, reason: ZReason }),
  response: z.object({
    settings: ZAuditWebhookSettings,
    signingSecret: z
      .string()
      .nullable()
      .describe("The new signing secret, shown this once; null when it was kept."),
    ...ZAuditReceipt,
  }),
  errors: ["VERSION_CONFLICT"],
  handle: ({ body: { reason, ...change }, ...input }) =>
    updateAuditWebhook(change, changeContextOf(input, reason), {
      ...authDeps(),
      isPrivateAddressAllowed: loadEnv().WEBHOOK_PRIVATE_ADDRESSES === "allow",
    }),
});
