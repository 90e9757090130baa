/**
 * When a dry-run candidate was created and each time it was changed, from its audit entries: what
 * the comparison's span starts from (`lib/control/dry-run/compare-candidate.ts`) and what the
 * candidate's chart marks.
 *
 * An id can be used again once its candidate is promoted or discarded, so the entries are read
 * newest first down to the latest `candidate.create`: that one and the updates after it are the
 * running candidate's; anything older belongs to an earlier candidate of the same name. A
 * candidate without a `candidate.create` entry (one imported with a whole policy, as the seed
 * does) is taken to be created at its row's `createdAt`, with no entry to link to.
 */
import { type TLimitSpec, ZDryRunCandidate } from "@limitplane/enforcer/policy";
import { z } from "zod";
import type { ReadDeps } from "../deps";
import type { CandidateRecord } from "./candidate-record";

/** Most audit entries read per candidate: a candidate changed more often is read from its latest. */
const MAX_ENTRIES = 200;

export interface CandidateLifecycleEvent {
  readonly kind: "created" | "changed";
  readonly atMs: number;
  /** The audit entry recording it (decimal text); null for a creation the log does not record. */
  readonly auditEntryId: string | null;
  /** The limit and target it had from then on, when the entry says. */
  readonly limit: TLimitSpec | null;
  readonly target: string | null;
}

export interface CandidateLifecycle {
  readonly createdAtMs: number;
  /** Each change of its limit or target, oldest first. */
  readonly changedAtMs: readonly number[];
  /** The creation, then every change, oldest first. */
  readonly events: readonly CandidateLifecycleEvent[];
}

/** The part of an entry's `after` (the candidate's audit view) the lifecycle keeps; the rest is ignored. */
const ZAfter = z
  .object({ limit: ZDryRunCandidate.shape.limit, target: ZDryRunCandidate.shape.target })
  .partial();

function eventOf(entry: {
  id: bigint;
  at: Date;
  action: string;
  after: unknown;
}): CandidateLifecycleEvent {
  const after = ZAfter.safeParse(entry.after);
  return {
    kind: entry.action === "candidate.create" ? "created" : "changed",
    atMs: entry.at.getTime(),
    auditEntryId: entry.id.toString(),
    limit: after.success ? (after.data.limit ?? null) : null,
    target: after.success ? (after.data.target ?? null) : null,
  };
}

export async function readCandidateLifecycle(
  candidate: Pick<CandidateRecord, "id" | "createdAt" | "limit" | "target">,
  deps: ReadDeps,
): Promise<CandidateLifecycle> {
  const entries = await deps.db.auditEntry.findMany({
    where: {
      entityType: "candidate",
      entityId: candidate.id,
      action: { in: ["candidate.create", "candidate.update"] },
    },
    orderBy: [{ at: "desc" }, { id: "desc" }],
    take: MAX_ENTRIES,
    select: { id: true, at: true, action: true, after: true },
  });
  const newestFirst: CandidateLifecycleEvent[] = [];
  for (const entry of entries) {
    newestFirst.push(eventOf(entry));
    if (entry.action === "candidate.create") break;
  }
  const events = newestFirst.reverse();
  const [first] = events;
  if (first?.kind !== "created") {
    events.unshift({
      kind: "created",
      atMs: Date.parse(candidate.createdAt),
      auditEntryId: null,
      limit: events.length === 0 ? candidate.limit : null,
      target: candidate.target,
    });
  }
  const createdAtMs = events[0]?.atMs ?? Date.parse(candidate.createdAt);
  return {
    createdAtMs,
    changedAtMs: events.filter((event) => event.kind === "changed").map((event) => event.atMs),
    events,
  };
}
