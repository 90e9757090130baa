import { z } from "zod";
import { AUDIT_ACTIONS, AUDIT_ENTITY_TYPES } from "@/lib/control/audit/audit-actions";
import { listAuditEntries, ZListAuditEntriesOptions } from "@/lib/control/audit/list-audit-entries";
import { verifyAuditChain } from "@/lib/control/audit/verify-audit-chain";
import { ACTOR_TYPES } from "@/lib/control/change-context";
import { controlDeps } from "@/lib/server/composition";
import { defineEndpoint } from "../endpoint";
import { queryInt, strictParams } from "./shared";

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
