/**
 * The current policy as its canonical document (@limitplane/enforcer/policy `canonicalPolicy`):
 * two exports of the same policy are byte-identical, and a diff between two exports shows only
 * what changed. Read in one repeatable-read transaction, so it is one consistent state even while
 * changes are being made; the customers and overrides (a million each) are read through
 * server-side cursors in canonical order and written out page by page (`writeCanonicalPolicy`),
 * so Postgres sorts them once and no statement returns them all.
 */
import {
  type TCustomer,
  type TCustomerOverride,
  writeCanonicalPolicy,
  ZCustomer,
  ZCustomerOverride,
} from "@limitplane/enforcer/policy";
import { Prisma } from "@/lib/generated/prisma/client";
import type { ClockedReadDeps } from "../deps";
import { parseStored } from "../stored";
import { noPolicyYet } from "./run-policy-change";
import { parseStoredPolicy, readStoredPolicy } from "./stored-policy";

export interface PolicyExport {
  /**
   * The canonical policy document. Expired and reverted incidents are left out: they are
   * history, in the audit log.
   */
  readonly document: string;
  /** The latest policy version when it was read; null before the first. */
  readonly policyVersion: number | null;
}

export interface ExportPolicyOptions {
  /** Incidents that have expired by this instant are left out. @default now, on `deps.clock` */
  readonly nowMs?: number;
}

/** Rows per FETCH from a cursor. */
const PAGE = 5_000;

/** The whole registry and every override, as one document (see `writePolicyExport`). */
export async function exportPolicy(
  options: ExportPolicyOptions,
  deps: ClockedReadDeps,
): Promise<PolicyExport> {
  const chunks: string[] = [];
  const { policyVersion } = await writePolicyExport((chunk) => chunks.push(chunk), options, deps);
  return { document: chunks.join(""), policyVersion };
}

/**
 * Writes the canonical document to `write`, chunk by chunk (awaited), and returns the latest
 * version when it was read.
 */
export async function writePolicyExport(
  write: (chunk: string) => unknown,
  options: ExportPolicyOptions = {},
  deps: ClockedReadDeps,
): Promise<{ readonly policyVersion: number | null }> {
  const nowMs = options.nowMs ?? deps.clock.nowMs();
  return deps.db.$transaction(
    async (tx) => {
      // Everything but the two large collections (with the customers and overrides the incidents
      // involve, so the slice validates as a document); those come from the cursors below.
      const stored = await readStoredPolicy(tx, {
        nowMs,
        customers: "referenced",
        scope: { kind: "core" },
      });
      if (stored === null) throw noPolicyYet();
      const document = parseStoredPolicy(stored);
      const latest = await tx.policyVersion.findFirst({
        orderBy: { version: "desc" },
        select: { version: true },
      });
      async function* fetchAll<Row, Item>(
        name: string,
        query: string,
        toItem: (row: Row) => Item,
      ): AsyncGenerator<Item[]> {
        await tx.$executeRawUnsafe(`DECLARE ${name} NO SCROLL CURSOR FOR ${query}`);
        for (;;) {
          const rows = await tx.$queryRawUnsafe<Row[]>(`FETCH ${PAGE} FROM ${name}`);
          if (rows.length === 0) break;
          yield rows.map(toItem);
        }
        await tx.$executeRawUnsafe(`CLOSE ${name}`);
      }
      await writeCanonicalPolicy(
        {
          document,
          customers: fetchAll<{ id: string; displayName: string; tier: string }, TCustomer>(
            "export_customers",
            `SELECT "id", "displayName", "tier" FROM "Customer" ORDER BY "id" COLLATE "C"`,
            (row) => parseStored(ZCustomer, row, `customer ${row.id}`),
          ),
          customerOverrides: fetchAll<
            { scope: string; customerId: string; endpointClass: string | null; limit: unknown },
            TCustomerOverride
          >(
            "export_overrides",
            `SELECT "scope", "customerId", "endpointClass", "limit" FROM "CustomerOverride"
             ORDER BY "customerId" COLLATE "C", coalesce("endpointClass", '') COLLATE "C"`,
            (row) =>
              parseStored(
                ZCustomerOverride,
                { customerId: row.customerId, endpointClass: row.endpointClass, limit: row.limit },
                `customer override ${row.scope}`,
              ),
          ),
        },
        write,
      );
      return { policyVersion: latest?.version ?? null };
    },
    { isolationLevel: Prisma.TransactionIsolationLevel.RepeatableRead, timeout: 1_800_000 },
  );
}
