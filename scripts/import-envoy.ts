/**
 * `npm run import:envoy -- [--dry-run] [--reason TEXT] FILE...`: imports envoyproxy/ratelimit
 * YAML files as descriptor rules (lib/control/descriptor-rule/import-envoy-config.ts), as one
 * audited change by the system actor, published at once. `--dry-run` prints the rules and their
 * difference from the stored ones and writes nothing. A file that cannot be carried over is
 * refused with its file, line and field, and nothing is written.
 *
 * Exit 0 when imported (or previewed), 1 when refused, 2 when it could not run.
 */
import { readFile } from "node:fs/promises";
import { parseArgs } from "node:util";
import { formatDescriptorPattern } from "@limitplane/enforcer/policy";
import { systemActor } from "../lib/control/change-context";
import type { ControlDeps } from "../lib/control/deps";
import { importEnvoyConfig } from "../lib/control/descriptor-rule/import-envoy-config";
import { isAppError } from "../lib/control/errors";
import { systemClock } from "../lib/server/composition";
import { getPrisma } from "../lib/server/db";
import { loadEnv } from "../lib/server/env";
import { createRedis } from "../lib/server/redis";
import { describeCliError } from "./cli-deps";

function describeLimit(limit: unknown): string {
  if (typeof limit === "string") return limit;
  return JSON.stringify(limit);
}

async function main(): Promise<number> {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      "dry-run": { type: "boolean", default: false },
      reason: { type: "string", default: "import of envoyproxy/ratelimit configuration" },
    },
  });
  if (positionals.length === 0) {
    console.error("import:envoy: give one or more YAML files");
    return 2;
  }
  const files = await Promise.all(
    positionals.map(async (name) => ({ name, text: await readFile(name, "utf8") })),
  );
  const db = getPrisma();
  const redis = createRedis("control", { connectionName: "limitplane-import-envoy" });
  const deps: ControlDeps = {
    db,
    publisher: { db, redis, prefix: loadEnv().REDIS_KEY_PREFIX, clock: systemClock },
    clock: systemClock,
    auditKey: loadEnv().AUDIT_KEY,
  };
  try {
    const result = await importEnvoyConfig(
      { files, dryRun: values["dry-run"] },
      { actor: systemActor("import-envoy"), reason: values.reason },
      deps,
    );
    const { preview } = result;
    for (const rule of preview.added) {
      console.log(`+ ${formatDescriptorPattern(rule)}  ${describeLimit(rule.limit)} ${rule.mode}`);
    }
    for (const { before, after } of preview.changed) {
      console.log(
        `~ ${formatDescriptorPattern(after)}  ${describeLimit(before.limit)} -> ${describeLimit(after.limit)} ${after.mode}`,
      );
    }
    for (const rule of preview.removed) console.log(`- ${formatDescriptorPattern(rule)}`);
    const summary = `${preview.rules.length} rules in ${preview.domains.join(", ")}: ${preview.added.length} added, ${preview.changed.length} changed, ${preview.removed.length} removed, ${preview.unchanged} unchanged`;
    if ("dryRun" in result) console.log(`import:envoy: dry run, nothing written. ${summary}.`);
    else if ("isNoChange" in result) console.log(`import:envoy: nothing differs. ${summary}.`);
    else {
      console.log(
        `import:envoy: imported as policy version ${result.policyVersion ?? "(none)"}, audit entry ${result.auditEntryId}. ${summary}.`,
      );
    }
    return 0;
  } catch (error: unknown) {
    if (isAppError(error) && error.code === "VALIDATION_FAILED") {
      console.error(`import:envoy: refused, nothing written.`);
      for (const field of error.fieldErrors ?? [])
        console.error(`  ${field.path}: ${field.message}`);
      return 1;
    }
    throw error;
  } finally {
    await db.$disconnect();
    redis.disconnect();
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(`import:envoy: ${describeCliError(error)}`);
    process.exit(2);
  },
);
