/**
 * Descriptor rules through the control plane: the envoyproxy/ratelimit import (preview, refusal
 * with nothing written, one audited change, no change on a second import), edits and deletes,
 * export and import of the whole policy, and a rate-limit service process following each change
 * over gRPC with no restart.
 */
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import type { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { ControlDeps } from "@/lib/control/deps";
import { createDescriptorRule } from "@/lib/control/descriptor-rule/create-descriptor-rule";
import { deleteDescriptorRule } from "@/lib/control/descriptor-rule/delete-descriptor-rule";
import { importEnvoyConfig } from "@/lib/control/descriptor-rule/import-envoy-config";
import { listDescriptorRules } from "@/lib/control/descriptor-rule/list-descriptor-rules";
import { raiseDescriptorValue } from "@/lib/control/descriptor-rule/raise-descriptor-value";
import { revertDescriptorRaise } from "@/lib/control/descriptor-rule/revert-descriptor-raise";
import { updateDescriptorRule } from "@/lib/control/descriptor-rule/update-descriptor-rule";
import { exportPolicy } from "@/lib/control/policy/export-policy";
import { importPolicy } from "@/lib/control/policy/import-policy";
import { systemClock } from "@/lib/server/composition";
import { createRedis } from "@/lib/server/redis";
import { filePrefix, waitFor } from "./helpers/gateway-processes";
import {
  countEverything,
  expectOneAuditEntry,
  expectRefusedWithoutWrites,
  importExamplePolicy,
  latestSnapshot,
  operatorContext,
} from "./helpers/policy-fixtures";
import {
  type RlsClient,
  rlsClient,
  type ServiceProcess,
  startService,
  waitForReady,
} from "./helpers/ratelimit-service-processes";
import { provideTestDatabase } from "./helpers/test-database";

const database = provideTestDatabase();
const prefix = filePrefix("di");
const FIXTURES = path.join(import.meta.dirname, "fixtures/envoy-ratelimit");
const ROOT = path.resolve(import.meta.dirname, "../..");

/** `npm run import:envoy -- ARGS` against this file's database and Redis prefix. */
function runImportEnvoy(args: readonly string[]): Promise<{ code: number | null; output: string }> {
  const child = spawn(
    process.execPath,
    ["--conditions=react-server", "--import", "tsx", "scripts/import-envoy.ts", ...args],
    {
      cwd: ROOT,
      env: {
        ...process.env,
        DATABASE_URL: database.current().url,
        REDIS_URL: inject("redisUrl"),
        REDIS_KEY_PREFIX: prefix,
      },
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  let output = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  child.stderr?.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  return new Promise((resolve) => child.once("exit", (code) => resolve({ code, output })));
}
let redis: Redis;
let deps: ControlDeps;
let service: ServiceProcess;
let client: RlsClient;

function fixture(name: string) {
  return { name, text: readFileSync(path.join(FIXTURES, name), "utf8") };
}

const TENANTS_YAML = {
  name: "tenants.yaml",
  text: [
    "domain: tenants",
    "descriptors:",
    "  - key: tenant",
    "    rate_limit: { unit: day, requests_per_unit: 3 }",
    "  - key: tenant",
    "    value: acme",
    "    rate_limit: { unit: day, requests_per_unit: 1 }",
    "",
  ].join("\n"),
};

async function serviceVersion(): Promise<number | null> {
  const status = (await (await fetch(`${service.httpUrl}/healthz`)).json()) as {
    policy: { version: number } | null;
  };
  return status.policy?.version ?? null;
}

async function untilServiceAt(version: number | null): Promise<void> {
  if (version === null) throw new Error("the change made no version");
  await waitFor(`the service to apply version ${version}`, async () =>
    (await serviceVersion()) === version ? true : undefined,
  );
}

async function codes(tenant: string, count: number): Promise<string[]> {
  const result: string[] = [];
  for (let i = 0; i < count; i++) {
    const reply = await client.shouldRateLimit({
      domain: "tenants",
      hits_addend: 0,
      descriptors: [{ entries: [{ key: "tenant", value: tenant }] }],
    });
    result.push(reply.overall_code);
  }
  return result;
}

beforeAll(async () => {
  redis = createRedis("control", { url: inject("redisUrl") });
  const db = database.current().db;
  deps = { db, publisher: { db, redis, prefix, clock: systemClock }, clock: systemClock };
  await importExamplePolicy(deps);
  service = await startService({ prefix, id: "rls-import", args: ["--no-leases"] });
  await waitForReady(service);
  client = rlsClient(service.grpcAddress);
});

afterAll(async () => {
  client?.close();
  await service?.stop();
  redis?.disconnect();
});

describe("importing envoyproxy/ratelimit files", () => {
  it("refuses a bad unit with its file, line and field, and writes nothing", async () => {
    const error = await expectRefusedWithoutWrites(database.current().db, () =>
      importEnvoyConfig(
        { files: [fixture("example-9.yaml"), fixture("bad-unit.yaml")] },
        operatorContext("import"),
        deps,
      ),
    );
    expect(error.code).toBe("VALIDATION_FAILED");
    expect(error.fieldErrors).toEqual([
      {
        path: "bad-unit.yaml:5 descriptors[0].rate_limit.unit",
        message:
          '"fortnight" is not a unit this import carries over; expected second, minute, hour, day, week, month or year (for other windows, edit the imported rule: any duration is possible)',
      },
    ]);
  });

  it("refuses an unknown field with its file, line and field, and writes nothing", async () => {
    const error = await expectRefusedWithoutWrites(database.current().db, () =>
      importEnvoyConfig({ files: [fixture("unknown-field.yaml")] }, operatorContext("x"), deps),
    );
    expect(error.fieldErrors?.[0]?.path).toBe(
      "unknown-field.yaml:7 descriptors[0].rate_limit.burst",
    );
  });

  it("a dry run shows the rules and their difference, and writes nothing", async () => {
    const before = await countEverything(database.current().db);
    const result = await importEnvoyConfig(
      { files: [TENANTS_YAML], dryRun: true },
      operatorContext("preview"),
      deps,
    );
    expect(await countEverything(database.current().db)).toEqual(before);
    expect("dryRun" in result).toBe(true);
    expect(result.preview.domains).toEqual(["tenants"]);
    expect(result.preview.added.map((rule) => rule.descriptor)).toEqual([
      [{ key: "tenant", value: null }],
      [{ key: "tenant", value: "acme" }],
    ]);
    expect(result.preview.removed).toEqual([]);
  });

  it("imports as one audited change the service follows; the same files again change nothing", async () => {
    const { result, entry } = await expectOneAuditEntry(database.current().db, () =>
      importEnvoyConfig({ files: [TENANTS_YAML] }, operatorContext("move from envoy"), deps),
    );
    expect(entry).toMatchObject({
      action: "descriptor-rule.import",
      entityType: "descriptor-rule",
      entityId: "tenants",
      reason: "move from envoy",
    });
    if ("dryRun" in result || "isNoChange" in result) throw new Error("expected a change");
    expect(entry.policyVersion).toBe(result.policyVersion);
    const snapshot = await latestSnapshot(database.current().db);
    expect(snapshot.policy.descriptorRules?.map((rule) => rule.domain)).toEqual([
      "tenants",
      "tenants",
    ]);
    await untilServiceAt(result.policyVersion);
    expect(await codes("acme", 2)).toEqual(["OK", "OVER_LIMIT"]);
    expect(await codes("hooli", 4)).toEqual(["OK", "OK", "OK", "OVER_LIMIT"]);

    const again = await importEnvoyConfig(
      { files: [TENANTS_YAML] },
      operatorContext("again"),
      deps,
    );
    expect("isNoChange" in again).toBe(true);
    expect(again.preview.unchanged).toBe(2);
  });

  it("a raise of one value is audited and published, the service follows it for that value only, a re-import keeps it, and a revert ends it", async () => {
    const [keyAlone] = (await listDescriptorRules(deps)).filter(
      (rule) => rule.descriptor[0]?.value === null,
    );
    if (keyAlone === undefined) throw new Error("no key-alone rule");
    // hooli has spent its 3 a day.
    const { result: raised, entry } = await expectOneAuditEntry(database.current().db, () =>
      raiseDescriptorValue(
        {
          ruleId: keyAlone.id,
          descriptor: [{ key: "tenant", value: "hooli" }],
          factor: 2,
          durationMs: 7_200_000,
        },
        operatorContext("hooli's launch"),
        deps,
      ),
    );
    expect(entry).toMatchObject({
      action: "descriptor-rule.raise",
      entityType: "descriptor-rule",
      entityId: keyAlone.id,
      reason: "hooli's launch",
    });
    expect(raised.raise).toMatchObject({ factor: 2, owner: expect.any(String) });
    expect(raised.rule.raises.map((raise) => raise.id)).toEqual([raised.raise.id]);
    await untilServiceAt(raised.policyVersion);
    expect(await codes("hooli", 4)).toEqual(["OK", "OK", "OK", "OVER_LIMIT"]);
    expect(await codes("globex", 4)).toEqual(["OK", "OK", "OK", "OVER_LIMIT"]);

    const again = await importEnvoyConfig(
      { files: [TENANTS_YAML] },
      operatorContext("again"),
      deps,
    );
    expect("isNoChange" in again).toBe(true);

    const reverted = await revertDescriptorRaise(
      { ruleId: keyAlone.id, raiseId: raised.raise.id, expectedVersion: raised.rule.version },
      operatorContext("launch over"),
      deps,
    );
    expect(reverted.rule.raises).toEqual([]);
    await untilServiceAt(reverted.policyVersion);
    expect(await codes("hooli", 1)).toEqual(["OVER_LIMIT"]);
  });

  it.each([
    {
      name: "a value the rule does not match",
      raise: { descriptor: [{ key: "tenant", value: "hooli" }], factor: 2 },
      path: "descriptor[0].value",
      message: 'must be "acme", the pattern\'s value',
    },
    {
      name: "a key the pattern does not have",
      raise: { descriptor: [{ key: "user", value: "acme" }], factor: 2 },
      path: "descriptor[0].key",
      message: 'must be "tenant", the pattern\'s key here',
    },
    {
      name: "a factor beyond the guardrails",
      raise: { descriptor: [{ key: "tenant", value: "acme" }], factor: 50 },
      path: "factor",
      message: "factor 50 would raise the limit 50x; the maximum raise is 10x",
    },
    {
      name: "neither a factor nor a limit",
      raise: { descriptor: [{ key: "tenant", value: "acme" }] },
      path: "factor",
      message: "give either a factor",
    },
  ])(
    "a raise with $name is refused naming the field, and nothing is written",
    async ({ raise, path: fieldPath, message }) => {
      const [acme] = (await listDescriptorRules(deps)).filter(
        (rule) => rule.descriptor[0]?.value === "acme",
      );
      if (acme === undefined) throw new Error("no acme rule");
      const error = await expectRefusedWithoutWrites(database.current().db, () =>
        raiseDescriptorValue(
          { ruleId: acme.id, durationMs: 3_600_000, ...raise },
          operatorContext("raise"),
          deps,
        ),
      );
      expect(error.code).toBe("VALIDATION_FAILED");
      expect(error.fieldErrors?.[0]?.path).toBe(fieldPath);
      expect(error.fieldErrors?.[0]?.message).toContain(message);
    },
  );

  it("an edit raises one value's rule and the service's answers change; a delete falls back to the key alone", async () => {
    const [acme] = (await listDescriptorRules(deps)).filter(
      (rule) => rule.descriptor[0]?.value === "acme",
    );
    if (acme === undefined) throw new Error("no acme rule");
    const raised = await updateDescriptorRule(
      {
        id: acme.id,
        expectedVersion: acme.version,
        limit: { algorithm: "fixed-window", limit: 4, windowMs: 86_400_000 },
      },
      operatorContext("acme's launch"),
      deps,
    );
    await untilServiceAt(raised.policyVersion);
    // One of the four was spent before; the counter continues.
    expect(await codes("acme", 4)).toEqual(["OK", "OK", "OK", "OVER_LIMIT"]);
    const deleted = await deleteDescriptorRule(
      { id: acme.id, expectedVersion: raised.rule.version },
      operatorContext("back to the default"),
      deps,
    );
    await untilServiceAt(deleted.policyVersion);
    // The key alone: 3 a day, counted on its own counter.
    expect(await codes("acme", 4)).toEqual(["OK", "OK", "OK", "OVER_LIMIT"]);
  });

  it("a rule created by hand with a pattern another rule has is refused, naming the rule", async () => {
    const [keyAlone] = await listDescriptorRules(deps);
    if (keyAlone === undefined) throw new Error("no rule");
    const error = await expectRefusedWithoutWrites(database.current().db, () =>
      createDescriptorRule(
        {
          id: "tenant-copy",
          domain: "tenants",
          descriptor: [{ key: "tenant" }],
          limit: "unlimited",
        },
        operatorContext("copy"),
        deps,
      ),
    );
    expect(error.code).toBe("VALIDATION_FAILED");
    expect(JSON.stringify(error.fieldErrors)).toContain("is already matched by");
  });

  it("the export carries the rules, and importing it back changes nothing", async () => {
    const exported = await exportPolicy({}, deps);
    const document = JSON.parse(exported.document) as { descriptorRules?: unknown[] };
    expect(document.descriptorRules).toHaveLength(1);
    const result = await importPolicy(document, operatorContext("round trip"), deps);
    expect("isNoChange" in result).toBe(true);
  });

  it("npm run import:envoy: a refusal names file, line and field and writes nothing; a dry run previews", async () => {
    const before = await countEverything(database.current().db);
    const refused = await runImportEnvoy([path.join(FIXTURES, "bad-unit.yaml")]);
    expect(refused.code).toBe(1);
    expect(refused.output).toContain('bad-unit.yaml:5 descriptors[0].rate_limit.unit: "fortnight"');
    const preview = await runImportEnvoy(["--dry-run", path.join(FIXTURES, "example-2.yaml")]);
    expect(preview.code).toBe(0);
    expect(preview.output).toContain("+ messaging: message_type=marketing, to_number");
    expect(preview.output).toContain("dry run, nothing written. 2 rules in messaging: 2 added");
    expect(await countEverything(database.current().db)).toEqual(before);
  });
});
