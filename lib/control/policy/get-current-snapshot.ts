/**
 * Reads of the compiled policy in Postgres (`PolicyVersion`, `PolicyEntry`), sized for a million
 * entries: the latest version's head, the entries a page at a time, and the snapshot one
 * customer's resolution needs (the core and that customer's overrides and incidents).
 */
import {
  CORE_KINDS_OF_ENTRIES,
  type PolicyEntry,
  parseEntryText,
  snapshotOfEntries,
  type TSnapshot,
} from "@limitplane/enforcer/policy";
import { z } from "zod";
import { parseOptions } from "../change-context";
import type { ReadDeps } from "../deps";
import { POLICY_SNAPSHOT_TOPIC } from "../outbox/outbox";
import { noPolicyYet } from "./run-policy-change";

export interface CurrentSnapshot {
  readonly version: number;
  /** The checksum of the entry set at this version. */
  readonly checksum: string;
  /** Entries in the set (null for a version made before entries). */
  readonly entries: number | null;
  /** Bytes of the version's delta (or of the whole set, when it went out as a snapshot). */
  readonly deltaBytes: number | null;
  /** When the version was made. */
  readonly createdAt: string;
  /** When it reached Redis; null while it waits for the publisher. */
  readonly publishedAt: string | null;
}

/** The latest version: what every enforcer should be running. */
export async function getCurrentSnapshot(deps: ReadDeps): Promise<CurrentSnapshot> {
  const latest = await deps.db.policyVersion.findFirst({
    orderBy: { version: "desc" },
    select: { version: true, checksum: true, entries: true, deltaBytes: true, createdAt: true },
  });
  if (latest === null) throw noPolicyYet();
  const outbox = await deps.db.outboxEvent.findFirst({
    where: { topic: POLICY_SNAPSHOT_TOPIC, payload: { equals: { version: latest.version } } },
    select: { publishedAt: true },
  });
  return {
    version: latest.version,
    checksum: latest.checksum,
    entries: latest.entries,
    deltaBytes: latest.deltaBytes,
    createdAt: latest.createdAt.toISOString(),
    publishedAt: outbox?.publishedAt?.toISOString() ?? null,
  };
}

export const ZSnapshotPageOptions = z.strictObject({
  /** The last key of the previous page (`nextCursor`). */
  after: z
    .string({ error: "after must be text" })
    .min(1, { error: "after must not be empty" })
    .max(300, { error: "after must be at most 300 characters" })
    .regex(/^[A-Za-z0-9._:@/-]+$/, {
      error: "after must be an entry key, as the previous page's nextCursor gives it",
    })
    .optional(),
  /** @default 500 */
  limit: z
    .number({ error: "limit must be a number" })
    .int({ error: "limit must be a whole number" })
    .min(1, { error: "limit must be at least 1" })
    .max(5_000, { error: "limit must be at most 5000" })
    .default(500),
});
export type SnapshotPageOptions = z.input<typeof ZSnapshotPageOptions>;

export interface SnapshotPage extends CurrentSnapshot {
  /** Entries by key, as enforcers hold them. */
  readonly items: readonly { readonly key: string; readonly value: unknown }[];
  /** Pass as `after` for the next page; null on the last. */
  readonly nextCursor: string | null;
}

/**
 * The latest version and a page of its entries, by key (keyset on the primary key), read in one
 * repeatable-read transaction so the page belongs to the version it is returned with.
 */
export async function getSnapshotPage(
  options: SnapshotPageOptions,
  deps: ReadDeps,
): Promise<SnapshotPage> {
  const input = parseOptions(ZSnapshotPageOptions, options);
  return deps.db.$transaction(
    async (tx) => {
      const head = await getCurrentSnapshot({ db: tx as ReadDeps["db"] });
      const rows = await tx.policyEntry.findMany({
        where: input.after === undefined ? undefined : { key: { gt: input.after } },
        orderBy: { key: "asc" },
        take: input.limit + 1,
        select: { key: true, value: true },
      });
      const page = rows.slice(0, input.limit);
      return {
        ...head,
        items: page.map((row) => ({ key: row.key, value: JSON.parse(row.value) as unknown })),
        nextCursor: rows.length > input.limit ? (page.at(-1)?.key ?? null) : null,
      };
    },
    { isolationLevel: "RepeatableRead" },
  );
}

/**
 * The compiled snapshot at the latest version, holding the core (settings, tiers, classes,
 * candidates) and either one customer's overrides and incidents or every entry (`all`: only for
 * small policies and tests; it reads the whole set). What explain resolves a customer against.
 */
export async function readCompiledSnapshot(
  scope: { readonly customerId: string | null } | "all",
  deps: ReadDeps,
): Promise<TSnapshot> {
  return deps.db.$transaction(
    async (tx) => {
      const head = await tx.policyVersion.findFirst({
        orderBy: { version: "desc" },
        select: { version: true, createdAt: true },
      });
      if (head === null) throw noPolicyYet();
      const rows = await tx.policyEntry.findMany({
        where:
          scope === "all"
            ? undefined
            : {
                OR: [
                  { kind: { in: [...CORE_KINDS_OF_ENTRIES] } },
                  ...(scope.customerId === null ? [] : [{ customerId: scope.customerId }]),
                ],
              },
        select: { key: true, value: true },
      });
      const entries: PolicyEntry[] = rows.map((row) => {
        const parsed = parseEntryText(row.key, row.value);
        if (!parsed.ok) {
          throw new Error(`The stored entry ${row.key} is invalid: ${parsed.errors[0]?.message}`);
        }
        return parsed.value;
      });
      return snapshotOfEntries(entries, {
        version: head.version,
        compiledAt: head.createdAt.toISOString(),
      });
    },
    { isolationLevel: "RepeatableRead" },
  );
}
