/**
 * The audit log's hash chain, the way CloudTrail's digest chain lets a reviewer prove a log whole:
 *
 * - `chainHash` = SHA-256 of the canonical JSON (canonicalJson) of the entry's content (id, time,
 *   actor, action, entity, customer, before, after, reason, request id, policy version) and the
 *   previous entry's `chainHash` (the empty string for the first chained entry). Altering an
 *   entry, or removing one from the middle, breaks the link at that entry or the next.
 * - `chainMac` = HMAC-SHA256 of `chainHash` under AUDIT_KEY, a secret the database never holds.
 *   The hash alone anyone can compute; without the key, a row inserted straight into the table
 *   (the application role may INSERT) cannot carry a valid MAC.
 *
 * Entries are chained in id order: each writer takes the AUDIT_CHAIN advisory lock (locks.ts) in
 * its own transaction, then draws the id and the time and reads the previous hash, so concurrent
 * writers are serialized and ids follow the chain. Entries written before the chain existed have
 * no hash and are reported as such, never as a break.
 *
 * What this proves and what it does not: docs/audit-chain.md.
 */
import { createHmac } from "node:crypto";
import { canonicalJson, sha256Hex } from "@limitplane/enforcer/policy";

/**
 * The public development key (AUDIT_KEY's default in lib/server/env.ts, refused in production).
 * Tests and development sign with it; its MACs prove nothing.
 */
export const DEV_AUDIT_KEY = "limitplane-development-audit-key-do-not-use-in-production";

/** Tells hashes of this layout from any later one. */
const CHAIN_VERSION = "limitplane-audit-chain-1";

/** What the chain covers of an entry: every column but the chain's own. */
export interface ChainedContent {
  readonly id: bigint;
  readonly at: Date;
  readonly actorType: string;
  readonly actorId: string | null;
  readonly actorName: string;
  readonly action: string;
  readonly entityType: string;
  readonly entityId: string;
  readonly customerId: string | null;
  /** As stored (a JSON column read back, or the value about to be written); null for SQL NULL. */
  readonly before: unknown;
  readonly after: unknown;
  readonly reason: string;
  readonly requestId: string | null;
  readonly policyVersion: number | null;
}

/** The entry's `chainHash`, given the previous entry's (`""` for the first chained entry). */
export function chainHashOf(entry: ChainedContent, previousHash: string): string {
  return sha256Hex(
    canonicalJson([
      CHAIN_VERSION,
      entry.id.toString(),
      entry.at.toISOString(),
      entry.actorType,
      entry.actorId,
      entry.actorName,
      entry.action,
      entry.entityType,
      entry.entityId,
      entry.customerId,
      entry.before ?? null,
      entry.after ?? null,
      entry.reason,
      entry.requestId,
      entry.policyVersion,
      previousHash,
    ]),
  );
}

/** The entry's `chainMac`: its hash signed with the audit key. */
export function chainMacOf(chainHash: string, auditKey: string): string {
  return createHmac("sha256", auditKey).update(chainHash).digest("hex");
}
