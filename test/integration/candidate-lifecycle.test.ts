/**
 * A candidate's lifecycle, read from the audit log: what the dry-run comparison's span starts from
 * and what the candidate's chart marks. Real Postgres; times compared with the rows written, never
 * with the wall clock.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { findCandidate } from "@/lib/control/candidate/candidate-record";
import { createCandidate } from "@/lib/control/candidate/create-candidate";
import { discardCandidate } from "@/lib/control/candidate/discard-candidate";
import { readCandidateLifecycle } from "@/lib/control/candidate/read-candidate-lifecycle";
import { updateCandidate } from "@/lib/control/candidate/update-candidate";
import type { ControlDeps } from "@/lib/control/deps";
import { createTier } from "@/lib/control/tier/create-tier";
import {
  depsFor,
  importExamplePolicy,
  operatorContext,
  uniqueName,
} from "./helpers/policy-fixtures";
import { provideTestDatabase } from "./helpers/test-database";

const database = provideTestDatabase();
let deps: ControlDeps;

beforeAll(async () => {
  deps = depsFor(database.current().db);
  await importExamplePolicy(deps);
});

const bucket = (capacity: number, refillPerSec: number) => ({
  algorithm: "token-bucket" as const,
  capacity,
  refillPerSec,
});

async function auditTimes(id: string): Promise<{ action: string; atMs: number; id: string }[]> {
  const rows = await database.current().db.auditEntry.findMany({
    where: { entityType: "candidate", entityId: id },
    orderBy: [{ at: "asc" }, { id: "asc" }],
    select: { id: true, at: true, action: true },
  });
  return rows.map((row) => ({ action: row.action, atMs: row.at.getTime(), id: row.id.toString() }));
}

describe("readCandidateLifecycle", () => {
  it("is the creation and each change, with their audit entries and the limit from then on", async () => {
    const tier = uniqueName("life-tier");
    await createTier(
      { name: tier, limit: { ...bucket(100, 10), onStoreFailure: "closed" } },
      operatorContext(),
      deps,
    );
    const id = uniqueName("life");
    await createCandidate(
      { id, target: `tier:${tier}`, limit: bucket(50, 5) },
      operatorContext(),
      deps,
    );
    await updateCandidate(
      { id, expectedVersion: 1, limit: bucket(40, 5) },
      operatorContext(),
      deps,
    );
    await updateCandidate(
      { id, expectedVersion: 2, limit: bucket(30, 5) },
      operatorContext(),
      deps,
    );
    const [created, first, second] = await auditTimes(id);

    const lifecycle = await readCandidateLifecycle(await findCandidate(deps.db, id), deps);
    expect(lifecycle.createdAtMs).toBe(created?.atMs);
    expect(lifecycle.changedAtMs).toEqual([first?.atMs, second?.atMs]);
    expect(lifecycle.events).toEqual([
      {
        kind: "created",
        atMs: created?.atMs,
        auditEntryId: created?.id,
        limit: bucket(50, 5),
        target: `tier:${tier}`,
      },
      {
        kind: "changed",
        atMs: first?.atMs,
        auditEntryId: first?.id,
        limit: bucket(40, 5),
        target: `tier:${tier}`,
      },
      {
        kind: "changed",
        atMs: second?.atMs,
        auditEntryId: second?.id,
        limit: bucket(30, 5),
        target: `tier:${tier}`,
      },
    ]);
  });

  it("a candidate re-created under a discarded one's id starts at its own creation", async () => {
    const id = uniqueName("again");
    await createCandidate(
      { id, target: "tier:free", limit: bucket(50, 5) },
      operatorContext(),
      deps,
    );
    await updateCandidate(
      { id, expectedVersion: 1, limit: bucket(40, 5) },
      operatorContext(),
      deps,
    );
    await discardCandidate({ id, expectedVersion: 2 }, operatorContext(), deps);
    await createCandidate(
      { id, target: "tier:pro", limit: bucket(60, 6) },
      operatorContext(),
      deps,
    );
    const entries = await auditTimes(id);
    const recreated = entries.at(-1);
    expect(recreated?.action).toBe("candidate.create");

    const lifecycle = await readCandidateLifecycle(await findCandidate(deps.db, id), deps);
    expect(lifecycle).toEqual({
      createdAtMs: recreated?.atMs,
      changedAtMs: [],
      events: [
        {
          kind: "created",
          atMs: recreated?.atMs,
          auditEntryId: recreated?.id,
          limit: bucket(60, 6),
          target: "tier:pro",
        },
      ],
    });
  });

  it("a candidate imported with a policy (no candidate.create entry) is created at its row's time", async () => {
    const candidate = await findCandidate(deps.db, "free-halved");
    const lifecycle = await readCandidateLifecycle(candidate, deps);
    expect(lifecycle).toEqual({
      createdAtMs: Date.parse(candidate.createdAt),
      changedAtMs: [],
      events: [
        {
          kind: "created",
          atMs: Date.parse(candidate.createdAt),
          auditEntryId: null,
          limit: candidate.limit,
          target: candidate.target,
        },
      ],
    });
  });
});
