import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  compileEndpointMatcher,
  type EndpointClassRules,
  type EndpointMatch,
  matchEndpointClass,
} from "./endpoint-matcher";
import {
  comparePathPatterns,
  matchesPathPattern,
  normalizeRequestPath,
  type PathPattern,
  parsePathPattern,
} from "./path-pattern";

const classes: EndpointClassRules[] = [
  { name: "v1-any", match: [{ method: "*", path: "/v1/**" }] },
  { name: "reports-all", match: [{ method: "*", path: "/v1/reports/**" }] },
  { name: "reports-one", match: [{ method: "GET", path: "/v1/reports/*" }] },
  { name: "reports-export", match: [{ method: "GET", path: "/v1/reports/export" }] },
  { name: "reports-exact", match: [{ method: "POST", path: "/v1/reports" }] },
  { name: "star-members", match: [{ method: "GET", path: "/v1/*/members" }] },
  { name: "orgs-member", match: [{ method: "GET", path: "/v1/orgs/*/members" }] },
  { name: "status-head", match: [{ method: "HEAD", path: "/v1/status" }] },
  { name: "status-get", match: [{ method: "GET", path: "/v1/status" }] },
  { name: "root", match: [{ method: "GET", path: "/" }] },
];

describe("matchEndpointClass", () => {
  it.each([
    ["GET", "/v1/reports/export", "reports-export"],
    ["GET", "/v1/reports/42", "reports-one"],
    ["GET", "/v1/reports/42/rows", "reports-all"],
    ["GET", "/v1/reports", "reports-all"],
    ["POST", "/v1/reports", "reports-exact"],
    ["DELETE", "/v1/reports/42", "reports-all"],
    ["GET", "/v1/search", "v1-any"],
    ["GET", "/v1", "v1-any"],
    // Trailing and repeated slashes, query strings and fragments.
    ["GET", "/v1/reports/", "reports-all"],
    ["POST", "/v1/reports/", "reports-exact"],
    ["GET", "/v1//reports///42", "reports-one"],
    ["GET", "/v1/reports/export?format=csv&x=/y", "reports-export"],
    ["GET", "/v1/reports/export#top", "reports-export"],
    ["GET", "/v1/reports/export/?", "reports-export"],
    // Case, percent-encoding, dot segments, backslashes, absolute-form targets.
    ["GET", "/V1/REPORTS/EXPORT", "reports-export"],
    ["get", "/v1/reports/export", "reports-export"],
    ["GET", "/v1/reports/%65xport", "reports-export"],
    ["GET", "/v1/reports/%45XPORT", "reports-export"],
    ["GET", "/v1/reports/x/../export", "reports-export"],
    ["GET", "/v1/reports/./export", "reports-export"],
    ["GET", "/v1/reports/x/%2e%2e/export", "reports-export"],
    ["GET", "/v1/reports/%2E%2E/search", "v1-any"],
    ["GET", "/v1/reports/a%2Fb", "reports-one"],
    ["GET", "/v1/reports/%zz", "reports-one"],
    ["GET", "\\v1\\reports\\export", "reports-export"],
    ["GET", "https://api.example.com/v1/reports/export?x", "reports-export"],
    // The leftmost difference decides.
    ["GET", "/v1/orgs/acme/members", "orgs-member"],
    ["GET", "/v1/orgs/members", "star-members"],
    ["GET", "/v1/teams/members", "star-members"],
    // Methods: exact beats *, HEAD also matches GET rules, after HEAD rules.
    ["HEAD", "/v1/status", "status-head"],
    ["GET", "/v1/status", "status-get"],
    ["HEAD", "/v1/reports/42", "reports-one"],
    ["POST", "/v1/status", "v1-any"],
    // The root.
    ["GET", "/", "root"],
    ["GET", "", "root"],
    ["GET", "/?q=1", "root"],
    ["GET", "/v1/../..", "root"],
  ])("%s %j belongs to %s", (method, path, expected) => {
    expect(matchEndpointClass(classes, method, path)?.endpointClass).toBe(expected);
  });

  it.each([
    ["POST", "/"],
    ["GET", "/v2/reports"],
    ["GET", "/v1/../../reports"],
    ["GET", "/v1%2Freports/export"],
  ])("%s %j matches nothing (the default class takes it)", (method, path) => {
    expect(matchEndpointClass(classes, method, path)).toBeNull();
  });

  it("does not depend on the order classes and rules are declared in", () => {
    const reversed = [...classes].reverse();
    for (const [method, path] of [
      ["GET", "/v1/reports/export"],
      ["GET", "/v1/reports"],
      ["HEAD", "/v1/status"],
      ["GET", "/v1/orgs/members"],
    ] as const) {
      expect(matchEndpointClass(reversed, method, path)).toEqual(
        matchEndpointClass(classes, method, path),
      );
    }
  });

  it("names the rule that matched", () => {
    expect(matchEndpointClass(classes, "GET", "/v1/reports/9")).toEqual({
      endpointClass: "reports-one",
      rule: { method: "GET", path: "/v1/reports/*" },
    });
  });
});

/** The match order written as a sort, to check the trie against. */
function referenceMatch(
  rules: readonly { name: string; method: string; pattern: PathPattern }[],
  method: string,
  path: string,
): string | null {
  const segments = normalizeRequestPath(path);
  const methodRank = (ruleMethod: string) => {
    if (ruleMethod === method) return 0;
    if (ruleMethod === "GET" && method === "HEAD") return 1;
    if (ruleMethod === "*") return 2;
    return null;
  };
  const candidates = rules
    .map((rule, order) => ({ rule, order, rank: methodRank(rule.method) }))
    .filter(({ rule, rank }) => rank !== null && matchesPathPattern(rule.pattern, segments))
    .sort(
      (a, b) =>
        comparePathPatterns(a.rule.pattern, b.rule.pattern) ||
        (a.rank ?? 0) - (b.rank ?? 0) ||
        a.order - b.order,
    );
  return candidates[0]?.rule.name ?? null;
}

describe("the compiled matcher", () => {
  const segment = fc.constantFrom("a", "b", "*", "**");
  const pattern = fc.array(segment, { maxLength: 4 }).map((parts) => {
    const rest = parts.indexOf("**");
    return `/${(rest === -1 ? parts : parts.slice(0, rest + 1)).join("/")}`;
  });
  const ruleSet = fc.uniqueArray(
    fc.record({ method: fc.constantFrom("GET", "HEAD", "POST", "*"), path: pattern }),
    { selector: (rule) => `${rule.method} ${rule.path}`, maxLength: 12 },
  );
  const request = fc.tuple(
    fc.constantFrom("GET", "HEAD", "POST", "PUT"),
    fc
      .array(fc.constantFrom("a", "b", "c", "A", "", ".."), { maxLength: 5 })
      .map((parts) => `/${parts.join("/")}`),
  );

  it("agrees with the match order written as a sort", () => {
    fc.assert(
      fc.property(
        ruleSet,
        fc.array(request, { minLength: 1, maxLength: 10 }),
        (rules, requests) => {
          const named = rules.map((rule, index) => ({ name: `c${index}`, match: [rule] }));
          const matcher = compileEndpointMatcher(named);
          const flat = rules.map((rule, index) => {
            const parsed = parsePathPattern(rule.path);
            if (!parsed.ok) throw new Error(parsed.message);
            return { name: `c${index}`, method: rule.method, pattern: parsed.pattern };
          });
          for (const [method, path] of requests) {
            const found: EndpointMatch | null = matcher.match(method, path);
            expect(found?.endpointClass ?? null).toBe(referenceMatch(flat, method, path));
          }
        },
      ),
    );
  });
});

describe("parsePathPattern", () => {
  it.each([
    ["v1/reports", 'must start with "/"'],
    ["/v1/reports/", 'must not end with "/"'],
    ["/v1//reports", "empty segment"],
    ["/v1/**/rows", '"**" may only be the last segment'],
    ["/v1/report*", '"*" must be a whole segment'],
    ["/v1/../admin", '"." or ".."'],
    ["/v1/Reports", "must be lowercase"],
    ["/v1/a%20b", "write it decoded, without %"],
    ["/v1/a b", "may only contain"],
    [`/${"a/".repeat(40)}a`, "at most 32 segments"],
    [`/${"a".repeat(600)}`, "at most 512 characters"],
  ])("refuses %j: %s", (source, fragment) => {
    const parsed = parsePathPattern(source);
    expect(parsed.ok).toBe(false);
    if (!parsed.ok) expect(parsed.message).toContain(fragment);
  });

  it("orders specificity as documented", () => {
    const sorted = [
      "/**",
      "/v1/**",
      "/v1/reports/**",
      "/v1/reports/*",
      "/v1/reports/export",
      "/v1/reports",
      "/v1/*/rows",
    ]
      .map((source) => {
        const parsed = parsePathPattern(source);
        if (!parsed.ok) throw new Error(parsed.message);
        return parsed.pattern;
      })
      .sort(comparePathPatterns)
      .map((pattern) => pattern.source);
    expect(sorted).toEqual([
      "/v1/reports/export",
      "/v1/reports/*",
      "/v1/reports",
      "/v1/reports/**",
      "/v1/*/rows",
      "/v1/**",
      "/**",
    ]);
  });
});
