import { renderToStaticMarkup } from "react-dom/server";
import { describe, expect, it } from "vitest";
import { EnforcerLagCell } from "./enforcer-lag";

const PUBLISHED_AT = Date.UTC(2025, 2, 4, 12, 0, 0);
const published = { version: 7, publishedAtMs: PUBLISHED_AT };

describe("EnforcerLagCell", () => {
  it("a gateway that started after publication: when it started and what it loaded, no lag", () => {
    const html = renderToStaticMarkup(
      <EnforcerLagCell
        enforcer={{
          version: 7,
          appliedAtMs: PUBLISHED_AT + 84_000,
          appliedVia: "startup",
          startedAtMs: PUBLISHED_AT + 83_900,
        }}
        published={published}
        nowMs={PUBLISHED_AT + 120_000}
      />,
    );
    expect(html).toContain("current");
    expect(html).toContain("loaded v7");
    expect(html).toContain(`dateTime="${new Date(PUBLISHED_AT + 83_900).toISOString()}"`);
    expect(html).not.toContain("after publication");
  });

  it("a gateway running at publication: how long applying took", () => {
    const html = renderToStaticMarkup(
      <EnforcerLagCell
        enforcer={{
          version: 7,
          appliedAtMs: PUBLISHED_AT + 2_500,
          appliedVia: "announcement",
          startedAtMs: PUBLISHED_AT - 60_000,
        }}
        published={published}
        nowMs={PUBLISHED_AT + 120_000}
      />,
    );
    expect(html).toContain("applied 3 s after publication");
  });

  it("behind: how many versions and for how long", () => {
    const html = renderToStaticMarkup(
      <EnforcerLagCell
        enforcer={{ version: 5, appliedAtMs: null, appliedVia: "poll", startedAtMs: null }}
        published={published}
        nowMs={PUBLISHED_AT + 90_000}
      />,
    );
    expect(html).toContain("2 versions behind");
    expect(html).toContain("for 1 min 30 s");
  });
});
