/**
 * `controlPlane.policyCache` at the enforcer's surface: an enforcer that cannot reach Redis at
 * start loads the policy saved on disk, and refuses every damaged or foreign file with one error
 * line naming the path and the problem, then runs without a policy (`withoutPolicy`). Options
 * that cannot be run with are an `EnforcerOptionsError` naming the field.
 */
import { createHash } from "node:crypto";
import { mkdir, mkdtemp, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createEnforcer, type Enforcer, type EnforcerOptions, EnforcerOptionsError } from "../src";
import { encodePolicyCache } from "../src/enforcer/policy-cache";
import { formatFieldPath, PolicyState } from "../src/policy";
import { REDIS_PROTOCOL_VERSION } from "../src/publication";
import { exampleSnapshot, freePort } from "../src/testing";

const PREFIX = "lp-cache-test:";
const SAVED_AT_MS = Date.UTC(2026, 11, 6, 0, 40);
const sha256Bytes = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest();
const running: Enforcer[] = [];
let dir: string;
let unreachable: string;

function cacheBytes(header: { protocolVersion?: number; keyPrefix?: string } = {}): Uint8Array {
  return encodePolicyCache(
    PolicyState.fromSnapshot(exampleSnapshot(() => {}, { version: 4 })).toBinary(),
    {
      protocolVersion: header.protocolVersion ?? REDIS_PROTOCOL_VERSION,
      keyPrefix: header.keyPrefix ?? PREFIX,
      savedAtMs: SAVED_AT_MS,
    },
    sha256Bytes,
  );
}

/** An enforcer on a Redis nobody listens on, with its log lines. */
async function startOn(file: string) {
  const lines: { level: string; message: string; fields: unknown }[] = [];
  const enforcer = await createEnforcer({
    expectedGateways: 1,
    redis: { url: unreachable, keyPrefix: PREFIX },
    controlPlane: { startupWaitMs: 200, withoutPolicy: "reject", policyCache: { path: file } },
    reporting: { seenCustomers: false },
    logger: { log: (level, message, fields) => lines.push({ level, message, fields }) },
  });
  running.push(enforcer);
  return { enforcer, lines };
}

const request = { customerId: "initech", method: "GET", path: "/v1/things" };

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "lp-enforcer-cache-"));
  unreachable = `redis://127.0.0.1:${await freePort()}`;
});

afterAll(async () => {
  await Promise.all(running.splice(0).map((enforcer) => enforcer.stop()));
  await rm(dir, { recursive: true, force: true });
});

describe("an enforcer that cannot reach Redis at start", () => {
  it("enforces the policy cached on disk, and says so", async () => {
    const file = path.join(dir, "good.lpcache");
    await writeFile(file, cacheBytes());
    const { enforcer, lines } = await startOn(file);
    const status = enforcer.status();
    expect(status.isReady).toBe(true);
    expect(status.policy).toMatchObject({ version: 4, via: "cache", savedAtMs: SAVED_AT_MS });
    expect(status.policyDescription).toBe("cached (version 4, saved at 2026-12-06T00:40:00.000Z)");
    expect(
      lines.filter((line) => line.level === "error" && /cached policy/.test(line.message)),
    ).toEqual([]);
    const result = await enforcer.check(request);
    expect(result.decision.source).not.toBe("no-policy");
    await enforcer.stop();
  });

  const flip = (bytes: Uint8Array, at: number) => {
    bytes[at] = (bytes[at] ?? 0) ^ 0xff;
    return bytes;
  };
  const cases: {
    name: string;
    make: (file: string) => Promise<void>;
    problem: string | RegExp;
  }[] = [
    {
      name: "truncated",
      make: (file) => writeFile(file, cacheBytes().subarray(0, 500)),
      problem:
        /^its snapshot is refused: snapshot\.length: the header says \d+ bytes, but the value is \d+: truncated$/,
    },
    {
      name: "a wrong checksum (one byte altered)",
      make: (file) => {
        const bytes = cacheBytes();
        return writeFile(file, flip(bytes, bytes.length - 100));
      },
      problem: /^its snapshot is refused: snapshot\.digest: /,
    },
    {
      name: "another protocol version",
      make: (file) => writeFile(file, cacheBytes({ protocolVersion: REDIS_PROTOCOL_VERSION + 1 })),
      problem: `saved under Redis protocol version ${REDIS_PROTOCOL_VERSION + 1}, but this release speaks ${REDIS_PROTOCOL_VERSION}`,
    },
    {
      name: "another key prefix",
      make: (file) => writeFile(file, cacheBytes({ keyPrefix: "staging:" })),
      problem: `saved for key prefix "staging:", but this enforcer uses "${PREFIX}"`,
    },
    {
      name: "not a file",
      make: (file) => mkdir(file),
      problem: "not a regular file (a directory)",
    },
    {
      name: "unreadable",
      make: (file) => symlink(file, file),
      problem: /^cannot be read \(ELOOP: /,
    },
  ];

  it.concurrent.each(cases)(
    "refuses a file that is $name in one line, and runs withoutPolicy",
    async ({ name, make, problem }) => {
      const file = path.join(dir, `${name.replace(/\W+/g, "-")}.lpcache`);
      await make(file);
      const { enforcer, lines } = await startOn(file);
      const refusals = lines.filter((line) => line.message.startsWith("cached policy refused"));
      expect(refusals).toHaveLength(1);
      const [refusal] = refusals;
      if (refusal === undefined) throw new Error("no refusal logged");
      expect(refusal.level).toBe("error");
      const { problem: said } = refusal.fields as { path: string; problem: string };
      expect(refusal.fields).toMatchObject({ path: file });
      if (typeof problem === "string") expect(said).toBe(problem);
      else expect(said).toMatch(problem);
      expect(refusal.message).toBe(
        `cached policy refused: ${file}: ${said}; requests get withoutPolicy meanwhile`,
      );
      expect(enforcer.status()).toMatchObject({ isReady: false, policy: null });
      expect(enforcer.status().policyDescription).toBe("none");
      const result = await enforcer.check(request);
      expect(result.decision).toMatchObject({ allowed: false, source: "no-policy" });
      expect(result.http.status).toBe(503);
      await enforcer.stop();
    },
  );
});

describe("createEnforcer refuses a policy cache it cannot run with", () => {
  const base = { expectedGateways: 1, redis: { url: "redis://127.0.0.1:6379" } };
  it.each([
    ["not an object", { controlPlane: { policyCache: "/tmp/x" } }, ["controlPlane.policyCache"]],
    [
      "an empty path",
      { controlPlane: { policyCache: { path: " " } } },
      ["controlPlane.policyCache.path"],
    ],
    [
      "a path with a NUL",
      { controlPlane: { policyCache: { path: "/tmp/a\u0000b" } } },
      ["controlPlane.policyCache.path"],
    ],
    [
      "a negative save interval and an unknown field",
      { controlPlane: { policyCache: { path: "/tmp/x", saveIntervalMs: -1, dir: "/tmp" } } },
      ["controlPlane.policyCache.saveIntervalMs", "controlPlane.policyCache.dir"],
    ],
    [
      "a bootstrap snapshot as well",
      {
        controlPlane: {
          policyCache: { path: "/tmp/x" },
          bootstrapSnapshot: exampleSnapshot(),
        },
      },
      ["controlPlane.policyCache"],
    ],
  ])("%s", async (_name, options, fields) => {
    const error = await createEnforcer({
      logger: { log() {} },
      ...base,
      ...(options as Partial<EnforcerOptions>),
    } as EnforcerOptions).then(
      (enforcer) => {
        running.push(enforcer);
        throw new Error("createEnforcer accepted the options");
      },
      (thrown: unknown) => thrown,
    );
    expect(error).toBeInstanceOf(EnforcerOptionsError);
    expect(
      (error as EnforcerOptionsError).errors.map((each) => formatFieldPath(each.path)),
    ).toEqual(fields);
  });
});
