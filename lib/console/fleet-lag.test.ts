import { describe, expect, it } from "vitest";
import { describeEnforcerLag, type EnforcerVersionFacts } from "./fleet-lag";

const PUBLISHED_AT = Date.UTC(2025, 2, 4, 12, 0, 0);
const NOW = PUBLISHED_AT + 90_000;
const published = { version: 12, publishedAtMs: PUBLISHED_AT };

function enforcer(facts: Partial<EnforcerVersionFacts>): EnforcerVersionFacts {
  return {
    version: 12,
    appliedAtMs: PUBLISHED_AT + 40,
    appliedVia: "announcement",
    startedAtMs: PUBLISHED_AT - 3_600_000,
    ...facts,
  };
}

describe("describeEnforcerLag", () => {
  it("running at publication and current: the time it took to apply", () => {
    expect(describeEnforcerLag(enforcer({}), published, NOW)).toEqual({
      kind: "applied",
      lagMs: 40,
    });
  });

  it("started after publication: when it started and what it loaded, never a lag", () => {
    // The review's case: a gateway started 84 s after v12 was published.
    const late = enforcer({
      startedAtMs: PUBLISHED_AT + 84_000,
      appliedAtMs: PUBLISHED_AT + 84_200,
      appliedVia: "startup",
    });
    expect(describeEnforcerLag(late, published, NOW)).toEqual({
      kind: "loaded-at-start",
      version: 12,
      startedAtMs: PUBLISHED_AT + 84_000,
    });
  });

  it("without a start time, loading at startup still means it was not running", () => {
    expect(
      describeEnforcerLag(
        enforcer({ startedAtMs: null, appliedVia: "startup", appliedAtMs: PUBLISHED_AT + 84_000 }),
        published,
        NOW,
      ),
    ).toEqual({ kind: "loaded-at-start", version: 12, startedAtMs: null });
  });

  it("current but not known to have been running: no figure that could read as lag", () => {
    expect(
      describeEnforcerLag(enforcer({ startedAtMs: null, appliedVia: "poll" }), published, NOW),
    ).toEqual({ kind: "current" });
    expect(describeEnforcerLag(enforcer({}), { version: 12, publishedAtMs: null }, NOW)).toEqual({
      kind: "current",
    });
  });

  it("behind: how many versions and for how long since publication", () => {
    expect(describeEnforcerLag(enforcer({ version: 10 }), published, NOW)).toEqual({
      kind: "behind",
      versionsBehind: 2,
      forMs: 90_000,
    });
  });

  it("behind, started after publication: behind since its own start", () => {
    expect(
      describeEnforcerLag(
        enforcer({ version: 11, startedAtMs: PUBLISHED_AT + 60_000 }),
        published,
        NOW,
      ),
    ).toEqual({ kind: "behind", versionsBehind: 1, forMs: 30_000 });
  });

  it("no version applied, or none published: unknown", () => {
    expect(describeEnforcerLag(enforcer({ version: null }), published, NOW)).toEqual({
      kind: "unknown",
    });
    expect(describeEnforcerLag(enforcer({}), null, NOW)).toEqual({ kind: "unknown" });
  });

  it("an enforcer ahead of what this console read counts as current, never negative", () => {
    expect(describeEnforcerLag(enforcer({ version: 13 }), published, NOW).kind).toBe("applied");
  });
});
