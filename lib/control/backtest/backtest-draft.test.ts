import { resolveLimits } from "@limitplane/enforcer/policy";
import { exampleSnapshot, tokenBucket } from "@limitplane/enforcer/testing";
import { describe, expect, it } from "vitest";
import { AppError } from "../errors";
import { applyBacktestDraft, DRAFT_INCIDENT_ID, ZBacktestDraft } from "./backtest-draft";

const current = exampleSnapshot();
const span = {
  fromMs: Date.parse("2025-06-05T00:00:00.000Z"),
  toMs: Date.parse("2025-06-06T00:00:00.000Z"),
};
const apply = (draft: unknown) => applyBacktestDraft(current, ZBacktestDraft.parse(draft), span);
const accountLimit = (snapshot: typeof current, customerId: string, tier: string, atMs: number) =>
  resolveLimits(snapshot, { customerId, tier, endpointClass: "default" }, atMs).checks.find(
    (check) => check.bucket === "account",
  );

function refusal(run: () => unknown): AppError {
  try {
    run();
  } catch (error: unknown) {
    if (error instanceof AppError) return error;
    throw error;
  }
  throw new Error("not refused");
}

describe("a backtest draft applied to the snapshot in force", () => {
  it("a tier edit replaces the tier's limit and nothing else", () => {
    const drafted = apply({ kind: "tier", name: "pro", limit: tokenBucket(20, 10) });
    expect(accountLimit(drafted, "someone", "pro", span.fromMs)?.limit).toEqual(
      tokenBucket(20, 10),
    );
    expect(drafted.policy.tiers.find((t) => t.name === "free")).toEqual(
      current.policy.tiers.find((t) => t.name === "free"),
    );
  });

  it("an incident is in force over the whole replay, from its first instant to its last", () => {
    const drafted = apply({
      kind: "incident",
      customerId: "globex",
      endpointClass: null,
      factor: 2,
      limit: null,
    });
    const incident = drafted.policy.incidentOverrides.find((i) => i.id === DRAFT_INCIDENT_ID);
    expect(Date.parse(incident?.startsAt ?? "")).toBeLessThan(span.fromMs);
    expect(Date.parse(incident?.expiresAt ?? "")).toBeGreaterThan(span.toMs);
    for (const atMs of [span.fromMs, span.toMs - 1]) {
      expect(accountLimit(drafted, "globex", "pro", atMs)?.scope).toBe(
        `incident:${DRAFT_INCIDENT_ID}`,
      );
    }
  });

  it("a dry-run candidate is replayed as promoted: enforced in place of its target, with the target's failure policy", () => {
    const drafted = apply({ kind: "candidate", id: "free-halved" });
    const free = drafted.policy.tiers.find((t) => t.name === "free");
    expect(free?.limit).toMatchObject({ ...tokenBucket(10, 5), mode: "enforce" });
    expect(free?.limit.onStoreFailure).toBe(
      current.policy.tiers.find((t) => t.name === "free")?.limit.onStoreFailure,
    );
    expect(drafted.policy.dryRunCandidates.map((c) => c.id)).not.toContain("free-halved");
  });

  it("refuses what it cannot apply, naming the field", () => {
    expect(refusal(() => apply({ kind: "candidate", id: "nope" })).fieldErrors[0]).toMatchObject({
      path: "draft.id",
    });
    expect(refusal(() => apply({ kind: "candidate" })).fieldErrors[0]?.path).toBe("draft.target");
    expect(
      refusal(() => apply({ kind: "tier", name: "platinum", limit: tokenBucket(20, 10) }))
        .fieldErrors[0]?.path,
    ).toBe("draft.name");
    expect(ZBacktestDraft.safeParse({ kind: "tiers" }).error?.issues[0]?.message).toMatch(
      /kind must be one of/,
    );
    expect(
      ZBacktestDraft.safeParse({
        kind: "incident",
        customerId: "globex",
        endpointClass: null,
        factor: 2,
        limit: tokenBucket(1, 1),
      }).error?.issues[0]?.path,
    ).toEqual(["factor"]);
  });
});
