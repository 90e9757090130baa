import { describe, expect, it } from "vitest";
import { buildPageLinks } from "./page-links";

describe("page links", () => {
  it("keeps the filters and sets one cursor per direction", () => {
    const links = buildPageLinks({
      pathname: "/audit",
      params: { actor: "ops@example.com", action: ["tier.update", "incident.raise"], after: "OLD" },
      nextCursor: "NEXT",
      previousCursor: "PREV",
    });
    expect(links).toEqual({
      nextHref:
        "/audit?actor=ops%40example.com&action=tier.update&action=incident.raise&after=NEXT",
      previousHref:
        "/audit?actor=ops%40example.com&action=tier.update&action=incident.raise&before=PREV",
      firstHref: "/audit?actor=ops%40example.com&action=tier.update&action=incident.raise",
    });
  });

  it("on the first page there is no first or previous link", () => {
    expect(
      buildPageLinks({ pathname: "/audit", params: {}, nextCursor: "N", previousCursor: null }),
    ).toEqual({ nextHref: "/audit?after=N", previousHref: null, firstHref: null });
    expect(
      buildPageLinks({
        pathname: "/audit",
        params: { before: "", q: undefined },
        nextCursor: null,
        previousCursor: null,
      }),
    ).toEqual({ nextHref: null, previousHref: null, firstHref: null });
  });

  it("encodes hostile filter values and takes other parameter names", () => {
    const links = buildPageLinks({
      pathname: "/customers",
      params: { q: '"><script>&x=1', cursor: "OLD" },
      nextCursor: "N",
      previousCursor: null,
      nextParam: "cursor",
    });
    expect(links.nextHref).toBe("/customers?q=%22%3E%3Cscript%3E%26x%3D1&cursor=N");
    expect(links.firstHref).toBe("/customers?q=%22%3E%3Cscript%3E%26x%3D1");
  });
});
