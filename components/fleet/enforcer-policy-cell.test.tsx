import { renderToStaticMarkup } from "react-dom/server";
import { describe, expect, it } from "vitest";
import { EnforcerPolicyCell, type EnforcerPolicyReport } from "./enforcer-policy-cell";

const SAVED_AT_MS = Date.UTC(2026, 0, 15, 10, 0, 30);

function textOf(enforcer: EnforcerPolicyReport): string {
  return renderToStaticMarkup(<EnforcerPolicyCell enforcer={enforcer} />).replace(/<[^>]+>/g, "");
}

describe("EnforcerPolicyCell", () => {
  it("shows a live policy as its version alone", () => {
    expect(textOf({ version: 12, noPolicy: null, cachedPolicy: null })).toBe("v12");
  });

  it("marks a policy from the cache on disk as cached, with when it was saved", () => {
    const html = renderToStaticMarkup(
      <EnforcerPolicyCell
        enforcer={{ version: 12, noPolicy: null, cachedPolicy: { savedAtMs: SAVED_AT_MS } }}
      />,
    );
    expect(html).toContain('<span class="badge badge-warn">cached</span>');
    expect(html).toContain('data-testid="cached-policy-cell"');
    expect(html).toContain(new Date(SAVED_AT_MS).toISOString());
    expect(textOf({ version: 12, noPolicy: null, cachedPolicy: { savedAtMs: null } })).toBe(
      "v12 cached",
    );
  });

  it("says no policy, and what the gateway does meanwhile", () => {
    expect(
      textOf({
        version: null,
        noPolicy: { sinceMs: SAVED_AT_MS, action: "reject", decisions: 7 },
        cachedPolicy: null,
      }),
    ).toBe("no policy refusing all · 7 so far");
  });
});
