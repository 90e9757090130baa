import { describe, expect, it } from "vitest";
import { NAV_ITEMS } from "./app-shell";
import { currentNavHref } from "./nav-links";

describe("the sidebar's current item", () => {
  const cases: [string, string | null][] = [
    ["/", "/"],
    ["/audit", "/audit"],
    ["/audit/webhook", "/audit/webhook"],
    ["/policies/safe-changes", "/policies"],
    ["/customers/acme", "/customers"],
    ["/auditor", null],
    ["/sign-in", null],
  ];
  it.each(cases)("%s marks %s, and only it", (pathname, expected) => {
    expect(currentNavHref(NAV_ITEMS, pathname)).toBe(expected);
  });
});
