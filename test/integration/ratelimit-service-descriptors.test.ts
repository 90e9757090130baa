/**
 * Descriptor rules in the rate-limit service: a real service process on the shared Redis, called
 * over gRPC as Envoy calls it. The policy holds a table of rules written for these tests and the
 * rules imported from envoyproxy/ratelimit's README examples (fixtures/envoy-ratelimit), and each
 * example is played request by request as that README describes it.
 *
 * Windows of a day never end during a test. For the README's per-second and per-minute limits a
 * sequence runs inside one window of Redis's clock: it starts at a window's beginning and, if
 * Redis's clock says it ran into the next window anyway (a very busy machine), it is run again
 * in a later window, where its counters start afresh. Nothing waits a fixed time.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import {
  compileSnapshot,
  parsePolicyDocument,
  type TDescriptorRuleInput,
} from "@limitplane/enforcer/policy";
import { examplePolicyInput, publishTestSnapshot } from "@limitplane/enforcer/testing";
import type { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { formatEnvoyProblem, readEnvoyConfigs } from "@/lib/control/descriptor-rule/envoy-config";
import { createRedis } from "@/lib/server/redis";
import { filePrefix, promSample } from "./helpers/gateway-processes";
import {
  type RlsClient,
  type RlsReply,
  rlsClient,
  type ServiceProcess,
  startService,
  waitForReady,
} from "./helpers/ratelimit-service-processes";

const FIXTURES = path.join(import.meta.dirname, "fixtures/envoy-ratelimit");
const README_EXAMPLES = [1, 2, 3, "4a", "4b", 5, 6, 7, 8, 9].map((n) => `example-${n}.yaml`);
const DAY = { algorithm: "fixed-window", windowMs: 86_400_000 } as const;

const prefix = filePrefix("rd");
let redis: Redis;
let service: ServiceProcess;
let client: RlsClient;
let importedRules: TDescriptorRuleInput[] = [];

/** The rules of the matching table: one domain, `t`, and a few beside it. */
const TABLE_RULES: TDescriptorRuleInput[] = [
  { id: "tenant-any", domain: "t", descriptor: [{ key: "tenant" }], limit: { ...DAY, limit: 10 } },
  {
    id: "tenant-acme",
    domain: "t",
    descriptor: [{ key: "tenant", value: "acme" }],
    limit: { ...DAY, limit: 2 },
  },
  {
    id: "tenant-acme-star",
    domain: "t",
    descriptor: [{ key: "tenant", value: "acme-*" }],
    limit: { ...DAY, limit: 3 },
  },
  {
    id: "tenant-big-shared",
    domain: "t",
    descriptor: [{ key: "tenant", value: "big-*" }],
    limit: { ...DAY, limit: 3 },
    wildcardCounter: "shared",
  },
  {
    id: "tenant-free-pass",
    domain: "t",
    descriptor: [{ key: "tenant", value: "free-pass" }],
    limit: "unlimited",
  },
  {
    id: "tenant-banned",
    domain: "t",
    descriptor: [{ key: "tenant", value: "banned" }],
    limit: "deny",
  },
  {
    id: "tenant-shadow",
    domain: "t",
    descriptor: [{ key: "tenant", value: "shadow" }],
    limit: { ...DAY, limit: 1 },
    mode: "dry-run",
  },
  {
    id: "tenant-off",
    domain: "t",
    descriptor: [{ key: "tenant", value: "off" }],
    limit: { ...DAY, limit: 1 },
    mode: "off",
  },
  {
    id: "plan-gold-tenant",
    domain: "t",
    descriptor: [{ key: "plan", value: "gold" }, { key: "tenant" }],
    limit: { algorithm: "token-bucket", capacity: 4, refillPerSec: 0.000_01 },
  },
  {
    id: "user-base",
    domain: "t",
    descriptor: [{ key: "user" }],
    limit: { ...DAY, limit: 2 },
    name: "per-user",
  },
  {
    id: "user-vip",
    domain: "t",
    descriptor: [{ key: "vip", value: "yes" }, { key: "user" }],
    limit: { ...DAY, limit: 5 },
    replaces: ["per-user"],
  },
];

type Entries = readonly (readonly [string, string])[];

function call(domain: string, descriptors: readonly Entries[], hits = 0): Promise<RlsReply> {
  return client.shouldRateLimit({
    domain,
    hits_addend: hits,
    descriptors: descriptors.map((entries) => ({
      entries: entries.map(([key, value]) => ({ key, value })),
    })),
  });
}

/** `count` calls of one descriptor, one after another; the codes in order. */
async function codes(domain: string, entries: Entries, count: number): Promise<string[]> {
  const result: string[] = [];
  for (let i = 0; i < count; i++) result.push((await call(domain, [entries])).overall_code);
  return result;
}

function okThenOver(ok: number, over: number): string[] {
  return [...Array<string>(ok).fill("OK"), ...Array<string>(over).fill("OVER_LIMIT")];
}

async function redisNowMs(): Promise<number> {
  const [seconds, micros] = await redis.time();
  return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
}

/** Waits, by Redis's clock, until window `index` of `windowMs` has begun. */
async function untilWindow(windowMs: number, index: number): Promise<void> {
  for (;;) {
    const nowMs = await redisNowMs();
    if (Math.floor(nowMs / windowMs) >= index) return;
    const leftMs = index * windowMs - nowMs;
    await new Promise((resolve) => setTimeout(resolve, Math.min(50, Math.max(1, leftMs))));
  }
}

/**
 * Runs `sequence` inside one fixed window of Redis's clock (see the header): at once, and again
 * from the start of a later window (whose counters are fresh) if it ran across a window's end.
 */
async function inOneWindow<T>(windowMs: number, sequence: () => Promise<T>): Promise<T> {
  for (let attempt = 0; attempt < 20; attempt++) {
    const startedIn = Math.floor((await redisNowMs()) / windowMs);
    const result = await sequence();
    const endedIn = Math.floor((await redisNowMs()) / windowMs);
    if (startedIn === endedIn) return result;
    await untilWindow(windowMs, endedIn + 1);
  }
  throw new Error(`no attempt fitted in one ${windowMs} ms window`);
}

async function metrics(): Promise<string> {
  return (await fetch(`${service.httpUrl}/metrics`)).text();
}

beforeAll(async () => {
  redis = createRedis("control", { url: inject("redisUrl") });
  const read = readEnvoyConfigs(
    README_EXAMPLES.map((name) => ({
      name,
      text: readFileSync(path.join(FIXTURES, name), "utf8"),
    })),
  );
  if (!read.ok) throw new Error(read.problems.map(formatEnvoyProblem).join("\n"));
  importedRules = read.rules;
  const parsed = parsePolicyDocument({
    ...examplePolicyInput(),
    descriptorRules: [...TABLE_RULES, ...importedRules],
  });
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors.slice(0, 3)));
  const snapshot = compileSnapshot(parsed.value, {
    version: 1,
    compiledAt: new Date().toISOString(),
  });
  await publishTestSnapshot(redis, prefix, snapshot);
  service = await startService({ prefix, id: "rls-descriptors", args: ["--no-leases"] });
  await waitForReady(service);
  client = rlsClient(service.grpcAddress);
});

afterAll(async () => {
  client?.close();
  await service?.stop();
  redis?.disconnect();
});

describe("matching, table-driven, over gRPC", () => {
  it.each([
    {
      name: "key and value win over the key alone",
      entries: [["tenant", "acme"]] as Entries,
      expected: okThenOver(2, 1),
    },
    {
      name: "the key alone counts each value on its own",
      entries: [["tenant", "initech"]] as Entries,
      expected: okThenOver(10, 1),
    },
    {
      name: "another value of the key alone has its own counter",
      entries: [["tenant", "hooli"]] as Entries,
      expected: okThenOver(10, 1),
    },
    {
      name: "a wildcard value wins over the key alone, counting per value",
      entries: [["tenant", "acme-eu"]] as Entries,
      expected: okThenOver(3, 1),
    },
    {
      name: "a second value under the same wildcard counts apart",
      entries: [["tenant", "acme-us"]] as Entries,
      expected: okThenOver(3, 1),
    },
    {
      name: "unlimited admits every request",
      entries: [["tenant", "free-pass"]] as Entries,
      expected: okThenOver(15, 0),
    },
    {
      name: "deny refuses the first request",
      entries: [["tenant", "banned"]] as Entries,
      expected: okThenOver(0, 3),
    },
    {
      name: "shadow mode admits past its limit",
      entries: [["tenant", "shadow"]] as Entries,
      expected: okThenOver(4, 0),
    },
    {
      name: "a nested rule matches its whole depth, and its algorithm is ours",
      entries: [
        ["plan", "gold"],
        ["tenant", "wayne"],
      ] as Entries,
      expected: okThenOver(4, 1),
    },
  ])("$name", async ({ entries, expected }) => {
    expect(await codes("t", entries, expected.length)).toEqual(expected);
  });

  it("a shared wildcard gives every matching value one counter", async () => {
    const replies = [];
    for (const value of ["big-a", "big-b", "big-c", "big-d", "big-a"]) {
      replies.push((await call("t", [[["tenant", value]]])).overall_code);
    }
    expect(replies).toEqual(okThenOver(3, 2));
  });

  it("shadow mode counts what it would have rejected", async () => {
    const scope = "descriptor:tenant-shadow";
    const sample = (text: string, outcome: string) =>
      promSample(text, "limitplane_decisions_total", { scope, outcome });
    const before = await metrics();
    expect(await codes("t", [["tenant", "shadow"]], 2)).toEqual(["OK", "OK"]);
    const after = await metrics();
    // Four earlier calls in the table: one admitted, the rest would-reject; two more now.
    expect(sample(after, "would_reject") - sample(before, "would_reject")).toBe(2);
    expect(sample(after, "allowed")).toBe(1);
  });

  it("a rule turned off is as if absent: the key alone decides", async () => {
    expect(await codes("t", [["tenant", "off"]], 11)).toEqual(okThenOver(10, 1));
  });

  it("a descriptor deeper or shallower than every rule matches none and is answered OK, spending nothing", async () => {
    const deeper: Entries = [
      ["tenant", "acme"],
      ["extra", "x"],
    ];
    expect(await codes("t", deeper, 4)).toEqual(okThenOver(4, 0));
    expect(await codes("t", [["plan", "gold"]], 4)).toEqual(okThenOver(4, 0));
    const reply = await call("t", [deeper]);
    expect(reply.statuses[0]).toMatchObject({ code: "OK", current_limit: null });
  });

  it("every descriptor of a call is decided, and the call is over if any is", async () => {
    // tenant=umbrella: 10 a day; tenant=acme-jp: 3 a day. Both descriptors in each call.
    const both: Entries[] = [[["tenant", "umbrella"]], [["tenant", "acme-jp"]]];
    const replies = [];
    for (let i = 0; i < 4; i++) replies.push(await call("t", both));
    expect(replies.map((reply) => reply.overall_code)).toEqual(okThenOver(3, 1));
    expect(replies[3]?.statuses.map((status) => status.code)).toEqual(["OK", "OVER_LIMIT"]);
    expect(replies[3]?.statuses[1]?.current_limit).toEqual({
      name: "descriptor:tenant-acme-star",
      requests_per_unit: 3,
      unit: "DAY",
    });
    // What the first descriptor admitted stays spent (envoyproxy/ratelimit does the same):
    // 4 of umbrella's 10 are gone.
    expect(await codes("t", [["tenant", "umbrella"]], 7)).toEqual(okThenOver(6, 1));
  });

  it("replaces: the replaced rule is neither checked nor counted while the replacing one matches", async () => {
    const vip: Entries = [
      ["vip", "yes"],
      ["user", "u1"],
    ];
    const plain: Entries = [["user", "u1"]];
    const replies = [];
    for (let i = 0; i < 6; i++) replies.push(await call("t", [plain, vip]));
    expect(replies.map((reply) => reply.overall_code)).toEqual(okThenOver(5, 1));
    expect(replies[0]?.statuses[0]).toMatchObject({ code: "OK", current_limit: null });
    // The per-user rule alone still has its whole 2.
    expect(await codes("t", plain, 3)).toEqual(okThenOver(2, 1));
  });

  it("hits_addend is the cost of each descriptor a rule decides", async () => {
    expect((await call("t", [[["tenant", "cyberdyne"]]], 9)).overall_code).toBe("OK");
    expect((await call("t", [[["tenant", "cyberdyne"]]], 2)).overall_code).toBe("OVER_LIMIT");
    expect((await call("t", [[["tenant", "cyberdyne"]]], 1)).overall_code).toBe("OK");
  });

  it("descriptors of a domain without rules still go through the mapping", async () => {
    const reply = await call("edge", [
      [
        ["customer_id", "acme"],
        ["tier", "pro"],
      ],
    ]);
    expect(reply.overall_code).toBe("OK");
    expect(reply.statuses[0]?.current_limit).not.toBeNull();
    expect(reply.statuses[0]?.current_limit?.name).not.toMatch(/^descriptor:/);
  });
});

describe("envoyproxy/ratelimit's README examples, imported and played", () => {
  it("each example file imports into rules", () => {
    expect(importedRules.map((rule) => rule.domain).sort()).toEqual(
      [
        "edge_proxy_per_ip",
        "edge_proxy_per_ip",
        "example4",
        "example4b",
        "example6",
        "example6",
        "example7",
        "example7",
        "example8",
        "example8",
        "example9",
        "internal",
        "internal",
        "messaging",
        "messaging",
        "mongo_cps",
        "mongo_cps",
      ].sort(),
    );
  });

  it("example 1: database=users and database=default each get 500 per second; other values none", async () => {
    const replies = await inOneWindow(1_000, async () => [
      await call("mongo_cps", [[["database", "users"]]], 500),
      await call("mongo_cps", [[["database", "users"]]], 1),
      await call("mongo_cps", [[["database", "default"]]], 500),
      await call("mongo_cps", [[["database", "default"]]], 1),
      await call("mongo_cps", [[["database", "orders"]]], 10_000),
    ]);
    expect(replies.map((reply) => reply.overall_code)).toEqual([
      "OK",
      "OVER_LIMIT",
      "OK",
      "OVER_LIMIT",
      "OK",
    ]);
    expect(replies[1]?.statuses[0]?.current_limit).toMatchObject({
      requests_per_unit: 500,
      unit: "SECOND",
    });
  });

  it("example 2: 5 marketing messages a day per number, 100 a day per number overall, one call deciding both", async () => {
    const marketing: Entries = [
      ["message_type", "marketing"],
      ["to_number", "2061111111"],
    ];
    const anyMessage: Entries = [["to_number", "2061111111"]];
    const replies = [];
    for (let i = 0; i < 6; i++) replies.push(await call("messaging", [marketing, anyMessage]));
    expect(replies.map((reply) => reply.overall_code)).toEqual(okThenOver(5, 1));
    expect(replies[5]?.statuses.map((status) => status.code)).toEqual(["OVER_LIMIT", "OK"]);
    // Another number has its own 5; and the overall 100 is per number too (6 spent so far).
    expect(
      await codes(
        "messaging",
        [
          ["message_type", "marketing"],
          ["to_number", "2062222222"],
        ],
        6,
      ),
    ).toEqual(okThenOver(5, 1));
    expect((await call("messaging", [anyMessage], 94)).overall_code).toBe("OK");
    expect((await call("messaging", [anyMessage], 1)).overall_code).toBe("OVER_LIMIT");
  });

  it("example 3: any address gets 10 per second, 50.0.0.5 none at all", async () => {
    const replies = await inOneWindow(1_000, async () => [
      await call("edge_proxy_per_ip", [[["remote_address", "50.0.0.1"]]], 10),
      await call("edge_proxy_per_ip", [[["remote_address", "50.0.0.1"]]], 1),
      await call("edge_proxy_per_ip", [[["remote_address", "50.0.0.5"]]], 1),
    ]);
    expect(replies.map((reply) => reply.overall_code)).toEqual(["OK", "OVER_LIMIT", "OVER_LIMIT"]);
    expect(replies[2]?.statuses[0]?.current_limit).toMatchObject({ requests_per_unit: 0 });
  });

  it("example 4: a two-entry descriptor does not match a one-level rule, and does match the nested one", async () => {
    const twoEntries: Entries = [
      ["key", "value"],
      ["subkey", "subvalue"],
    ];
    const replies = await inOneWindow(1_000, async () => [
      await call("example4", [twoEntries], 1_000),
      await call("example4b", [twoEntries], 300),
      await call("example4b", [twoEntries], 1),
    ]);
    expect(replies.map((reply) => reply.overall_code)).toEqual(["OK", "OK", "OVER_LIMIT"]);
    expect(replies[0]?.statuses[0]?.current_limit).toBeNull();
  });

  it("example 5: ldap is unlimited (remaining the largest uint32), azure 100 a minute", async () => {
    const ldap = await call("internal", [[["ldap", "any"]]], 1_000_000);
    expect(ldap.overall_code).toBe("OK");
    expect(ldap.statuses[0]?.limit_remaining).toBe(4_294_967_295);
    const replies = await inOneWindow(60_000, async () => [
      await call("internal", [[["azure", "tenant-1"]]], 100),
      await call("internal", [[["azure", "tenant-1"]]], 1),
    ]);
    expect(replies.map((reply) => reply.overall_code)).toEqual(["OK", "OVER_LIMIT"]);
  });

  it("example 6: user-a is never limited (shadow mode), user-b gets 20 per second", async () => {
    const replies = await inOneWindow(1_000, async () => [
      await call(
        "example6",
        [
          [
            ["service", "auth-service"],
            ["user", "user-a"],
          ],
        ],
        50,
      ),
      await call(
        "example6",
        [
          [
            ["service", "auth-service"],
            ["user", "user-a"],
          ],
        ],
        1,
      ),
      await call(
        "example6",
        [
          [
            ["service", "auth-service"],
            ["user", "user-b"],
          ],
        ],
        20,
      ),
      await call(
        "example6",
        [
          [
            ["service", "auth-service"],
            ["user", "user-b"],
          ],
        ],
        1,
      ),
    ]);
    expect(replies.map((reply) => reply.overall_code)).toEqual(["OK", "OK", "OK", "OVER_LIMIT"]);
  });

  it("example 7: with both descriptors the 10/s rule replaces the 5/s one, which keeps its 5", async () => {
    const first: Entries = [
      ["key_1", "value_1"],
      ["user", "bkthomps"],
    ];
    const second: Entries = [
      ["key_2", "value_2"],
      ["user", "bkthomps"],
    ];
    const replies = await inOneWindow(1_000, async () => [
      await call("example7", [first, second], 10),
      await call("example7", [first, second], 1),
      await call("example7", [first], 5),
      await call("example7", [first], 1),
    ]);
    expect(replies.map((reply) => reply.overall_code)).toEqual([
      "OK",
      "OVER_LIMIT",
      "OK",
      "OVER_LIMIT",
    ]);
  });

  it("example 8: unlisted values get 10 a minute each, value1 20, and metrics name the values", async () => {
    const replies = await inOneWindow(60_000, async () => [
      await call("example8", [[["key1", "unspecified_value"]]], 10),
      await call("example8", [[["key1", "unspecified_value"]]], 1),
      await call("example8", [[["key1", "unspecified_value2"]]], 10),
      await call("example8", [[["key1", "value1"]]], 20),
      await call("example8", [[["key1", "value1"]]], 1),
    ]);
    expect(replies.map((reply) => reply.overall_code)).toEqual([
      "OK",
      "OVER_LIMIT",
      "OK",
      "OK",
      "OVER_LIMIT",
    ]);
    const text = await metrics();
    const detailed = importedRules.find(
      (rule) => rule.domain === "example8" && rule.detailedMetric,
    );
    const series = (suffix: string, code: string) =>
      promSample(text, "limitplane_service_descriptors_total", {
        domain: "example8",
        rule: `descriptor:${detailed?.id}${suffix}`,
        code,
      });
    expect(series("/key1=unspecified_value", "OVER_LIMIT")).toBeGreaterThanOrEqual(1);
    expect(series("/key1=unspecified_value2", "OK")).toBeGreaterThanOrEqual(1);
  });

  it("example 9: every value starting with value gets 20 a minute of its own", async () => {
    const replies = await inOneWindow(60_000, async () => [
      await call("example9", [[["key1", "value_1"]]], 20),
      await call("example9", [[["key1", "value_1"]]], 1),
      await call("example9", [[["key1", "value_2"]]], 20),
      await call("example9", [[["key1", "other"]]], 1_000),
    ]);
    expect(replies.map((reply) => reply.overall_code)).toEqual(["OK", "OVER_LIMIT", "OK", "OK"]);
  });
});
