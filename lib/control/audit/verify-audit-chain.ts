/**
 * Verifies the audit log's hash chain (audit-chain.ts) from its first entry to its last, in id
 * order, a page at a time, and names the first entry where it breaks:
 *
 * - `altered`: the entry's content and the previous entry's hash do not give its `chainHash`: it
 *   was changed after it was written, or an entry before it was removed;
 * - `unsigned`: its `chainMac` is not the hash signed with AUDIT_KEY: it was written without the
 *   key (a row inserted straight into the table, even with a correctly computed hash);
 * - `unchained`: it has no hash although entries before it have one: written outside the
 *   application.
 *
 * Entries from before the chain existed (no hash, and no chained entry before them) are counted,
 * not judged. Removing entries from the end leaves a shorter chain that verifies: compare `head`
 * with one noted earlier (docs/audit-chain.md).
 */
import { timingSafeEqual } from "node:crypto";
import type { PrismaClient } from "@/lib/generated/prisma/client";
import { chainHashOf, chainMacOf, DEV_AUDIT_KEY } from "./audit-chain";

export type AuditChainProblem = "altered" | "unsigned" | "unchained";

export interface AuditChainBreak {
  /** The first entry that does not verify (a bigint, as decimal text). */
  readonly entryId: string;
  readonly problem: AuditChainProblem;
  /** One sentence for a reviewer. */
  readonly message: string;
}

export interface AuditChainVerification {
  /** True when every chained entry verified. */
  readonly isWhole: boolean;
  /** Chained entries that verified, before the first break if any. */
  readonly entriesVerified: number;
  /** Entries written before the chain existed (no hash, nothing chained before them). */
  readonly entriesBeforeChain: number;
  /** The last entry that verified: note it, and a later check proves nothing after it went. */
  readonly head: { readonly entryId: string; readonly chainHash: string } | null;
  readonly firstBreak: AuditChainBreak | null;
}

export interface VerifyAuditChainDeps {
  readonly db: PrismaClient;
  /** AUDIT_KEY. @default DEV_AUDIT_KEY */
  readonly auditKey?: string;
}

const PAGE_SIZE = 1_000;

const chainedSelect = {
  id: true,
  at: true,
  actorType: true,
  actorId: true,
  actorName: true,
  action: true,
  entityType: true,
  entityId: true,
  customerId: true,
  before: true,
  after: true,
  reason: true,
  requestId: true,
  policyVersion: true,
  chainHash: true,
  chainMac: true,
} as const;

/** The entries after `afterId` (all from the first when null), oldest first. */
function readPage(db: PrismaClient, afterId: bigint | null, pageSize: number) {
  return db.auditEntry.findMany({
    where: afterId === null ? {} : { id: { gt: afterId } },
    orderBy: { id: "asc" },
    take: pageSize,
    select: chainedSelect,
  });
}

function isSameHex(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}

export async function verifyAuditChain(
  deps: VerifyAuditChainDeps,
  options: { readonly pageSize?: number } = {},
): Promise<AuditChainVerification> {
  const auditKey = deps.auditKey ?? DEV_AUDIT_KEY;
  const pageSize = options.pageSize ?? PAGE_SIZE;
  let previousHash: string | null = null;
  let entriesVerified = 0;
  let entriesBeforeChain = 0;
  let head: AuditChainVerification["head"] = null;
  let afterId: bigint | null = null;
  const result = (firstBreak: AuditChainBreak | null): AuditChainVerification => ({
    isWhole: firstBreak === null,
    entriesVerified,
    entriesBeforeChain,
    head,
    firstBreak,
  });
  for (;;) {
    const rows = await readPage(deps.db, afterId, pageSize);
    for (const row of rows) {
      const entryId = row.id.toString();
      if (row.chainHash === null) {
        if (previousHash === null) {
          entriesBeforeChain++;
          continue;
        }
        return result({
          entryId,
          problem: "unchained",
          message: `Entry ${entryId} has no chain hash although entries before it have one: it was written outside the application.`,
        });
      }
      if (!isSameHex(chainHashOf(row, previousHash ?? ""), row.chainHash)) {
        return result({
          entryId,
          problem: "altered",
          message: `Entry ${entryId} does not match its chain hash: it was changed after it was written, or an entry before it was removed.`,
        });
      }
      if (row.chainMac === null || !isSameHex(chainMacOf(row.chainHash, auditKey), row.chainMac)) {
        return result({
          entryId,
          problem: "unsigned",
          message: `Entry ${entryId} is not signed with AUDIT_KEY: it was written without the key (straight into the table) or under another key.`,
        });
      }
      previousHash = row.chainHash;
      entriesVerified++;
      head = { entryId, chainHash: row.chainHash };
    }
    const last = rows.at(-1);
    if (last === undefined || rows.length < pageSize) return result(null);
    afterId = last.id;
  }
}
