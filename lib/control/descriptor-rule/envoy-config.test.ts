import { readFileSync } from "node:fs";
import path from "node:path";
import { parsePolicyDocument, ZDescriptorRule } from "@limitplane/enforcer/policy";
import { describe, expect, it } from "vitest";
import { envoyRuleId, formatEnvoyProblem, readEnvoyConfigs } from "./envoy-config";

const FIXTURES = path.resolve(
  import.meta.dirname,
  "../../../test/integration/fixtures/envoy-ratelimit",
);

function fixture(name: string) {
  return { name, text: readFileSync(path.join(FIXTURES, name), "utf8") };
}

function problemsOf(...files: { name: string; text: string }[]): string[] {
  const result = readEnvoyConfigs(files);
  if (result.ok) throw new Error("expected a refusal");
  return result.problems.map(formatEnvoyProblem);
}

describe("readEnvoyConfigs", () => {
  it("maps nesting, units, requests_per_unit 0, unlimited, shadow_mode, replaces and detailed_metric", () => {
    const result = readEnvoyConfigs([
      fixture("example-2.yaml"),
      fixture("example-3.yaml"),
      fixture("example-5.yaml"),
      fixture("example-6.yaml"),
      fixture("example-7.yaml"),
      fixture("example-8.yaml"),
    ]);
    if (!result.ok) throw new Error(result.problems.map(formatEnvoyProblem).join("\n"));
    const byPattern = new Map(
      result.rules.map((rule) => [
        `${rule.domain}: ${rule.descriptor.map((level) => `${level.key}=${level.value ?? "*"}`).join(", ")}`,
        rule,
      ]),
    );
    expect([...byPattern.keys()]).toEqual([
      "messaging: message_type=marketing, to_number=*",
      "messaging: to_number=*",
      "edge_proxy_per_ip: remote_address=*",
      "edge_proxy_per_ip: remote_address=50.0.0.5",
      "internal: ldap=*",
      "internal: azure=*",
      "example6: service=*, user=user-a",
      "example6: service=*, user=user-b",
      "example7: key_1=value_1, user=bkthomps",
      "example7: key_2=value_2, user=bkthomps",
      "example8: key1=*",
      "example8: key1=value1",
    ]);
    expect(byPattern.get("messaging: message_type=marketing, to_number=*")).toMatchObject({
      limit: { algorithm: "fixed-window", limit: 5, windowMs: 86_400_000 },
      mode: "enforce",
    });
    expect(byPattern.get("edge_proxy_per_ip: remote_address=50.0.0.5")?.limit).toBe("deny");
    expect(byPattern.get("internal: ldap=*")?.limit).toBe("unlimited");
    expect(byPattern.get("example6: service=*, user=user-a")?.mode).toBe("dry-run");
    expect(byPattern.get("example7: key_1=value_1, user=bkthomps")).toMatchObject({
      name: "specific_limit",
      replaces: [],
    });
    expect(byPattern.get("example7: key_2=value_2, user=bkthomps")).toMatchObject({
      name: null,
      replaces: ["specific_limit"],
    });
    expect(byPattern.get("example8: key1=*")?.detailedMetric).toBe(true);
    // What it produces is a valid part of a policy document.
    for (const rule of result.rules) expect(rule.id).toMatch(/^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/);
  });

  it("gives a pattern the same id every time, and different patterns different ids", () => {
    expect(envoyRuleId("d", [["k", "v"]])).toBe(envoyRuleId("d", [["k", "v"]]));
    expect(envoyRuleId("d", [["k", "v"]])).not.toBe(envoyRuleId("d", [["k", null]]));
    expect(envoyRuleId("d", [["k", "v"]])).not.toBe(envoyRuleId("d", [["k", "v*"]]));
    const long = envoyRuleId("x".repeat(300), [["é ü", "/".repeat(100)]]);
    expect(long).toMatch(/^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/);
  });

  it("refuses an unknown field with its file, line and field", () => {
    expect(problemsOf(fixture("unknown-field.yaml"))).toEqual([
      'unknown-field.yaml:7: descriptors[0].rate_limit.burst: unknown field "burst"; expected one of: unit, requests_per_unit, unlimited, name, replaces',
    ]);
  });

  it.each([
    ["second", 1_000],
    ["minute", 60_000],
    ["HOUR", 3_600_000],
    ["day", 86_400_000],
    ["week", 604_800_000],
    ["month", 2_592_000_000],
    ["year", 31_536_000_000],
  ])(
    "unit %s is a fixed window of envoyproxy/ratelimit's length for it (%i ms)",
    (unit, windowMs) => {
      const result = readEnvoyConfigs([
        {
          name: "u.yaml",
          text: `domain: d\ndescriptors:\n  - key: k\n    rate_limit: { unit: ${unit}, requests_per_unit: 7 }\n`,
        },
      ]);
      if (!result.ok) throw new Error(result.problems.map(formatEnvoyProblem).join("\n"));
      expect(result.rules[0]?.limit).toEqual({ algorithm: "fixed-window", limit: 7, windowMs });
      // The policy holds it as it is.
      expect(ZDescriptorRule.safeParse(result.rules[0]).success).toBe(true);
    },
  );

  it("refuses a unit it cannot carry over with its file, line and field", () => {
    expect(problemsOf(fixture("bad-unit.yaml"))).toEqual([
      'bad-unit.yaml:5: descriptors[0].rate_limit.unit: "fortnight" is not a unit this import carries over; expected second, minute, hour, day, week, month or year (for other windows, edit the imported rule: any duration is possible)',
    ]);
  });

  it.each([
    ["not yaml", "domain: [\n", /^x\.yaml:\d+: \(yaml\): /],
    ["no domain", "descriptors: []\n", /^x\.yaml:1: domain: is required$/],
    ["a list at the root", "- 1\n", /^x\.yaml:1: \(root\): must be a map/],
    [
      "no key",
      "domain: d\ndescriptors:\n  - value: v\n",
      /^x\.yaml:3: descriptors\[0\]\.key: is required$/,
    ],
    [
      "unlimited with a unit",
      "domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unlimited: true\n      unit: second\n",
      /^x\.yaml:6: descriptors\[0\]\.rate_limit\.unit: an unlimited rate limit takes no unit$/,
    ],
    [
      "a negative requests_per_unit",
      "domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: second\n      requests_per_unit: -1\n",
      /^x\.yaml:6: descriptors\[0\]\.rate_limit\.requests_per_unit: must be a whole number/,
    ],
    [
      "a rule replacing itself",
      "domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: second\n      requests_per_unit: 1\n      name: a\n      replaces:\n        - name: a\n",
      /^x\.yaml:9: descriptors\[0\]\.rate_limit\.replaces\[0\]\.name: a rate limit cannot replace itself$/,
    ],
    [
      "the same descriptor twice",
      "domain: d\ndescriptors:\n  - key: k\n  - key: k\n",
      /^x\.yaml:4: descriptors\[1\]: repeats the descriptor at x\.yaml:3/,
    ],
    [
      "shadow_mode that is not a boolean",
      "domain: d\ndescriptors:\n  - key: k\n    shadow_mode: sometimes\n",
      /^x\.yaml:4: descriptors\[0\]\.shadow_mode: must be true or false$/,
    ],
  ])("refuses %s, naming where", (_name, text, expected) => {
    const problems = problemsOf({ name: "x.yaml", text });
    expect(problems[0]).toMatch(expected);
  });

  it("refuses two files configuring one domain, and gives no rules when any file is refused", () => {
    const problems = problemsOf(fixture("example-9.yaml"), {
      name: "again.yaml",
      text: "domain: example9\ndescriptors: []\n",
    });
    expect(problems).toEqual([
      'again.yaml:1: domain: domain "example9" is already configured by example-9.yaml',
    ]);
    const mixed = readEnvoyConfigs([fixture("example-1.yaml"), fixture("bad-unit.yaml")]);
    expect(mixed.ok).toBe(false);
  });

  it("every README example reads into rules a policy document accepts", () => {
    const names = [1, 2, 3, "4a", "4b", 5, 6, 7, 8, 9].map((n) => `example-${n}.yaml`);
    const result = readEnvoyConfigs(names.map(fixture));
    if (!result.ok) throw new Error(result.problems.map(formatEnvoyProblem).join("\n"));
    const example = JSON.parse(
      readFileSync(
        path.resolve(
          import.meta.dirname,
          "../../../packages/enforcer/src/policy/fixtures/example-policy.json",
        ),
        "utf8",
      ),
    ) as Record<string, unknown>;
    const parsed = parsePolicyDocument({ ...example, descriptorRules: result.rules });
    if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors.slice(0, 3)));
    expect(parsed.value.descriptorRules).toHaveLength(result.rules.length);
  });
});
