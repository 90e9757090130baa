/**
 * `npm run db:seed`: gives a new installation a policy to look at. When the database has no
 * policy yet, imports packages/enforcer/src/policy/fixtures/example-policy.json through `importPolicy` (one audited
 * `policy.import` by the system actor, reason "initial seed"), so the quick start has tiers,
 * endpoint classes, customers, an override, a dry-run candidate and an incident. A database that
 * already has a policy is left alone.
 *
 * The example's incident overrides are dated in the past; each is moved to start now and keep
 * its duration, so the seeded console shows one active incident rather than none.
 */

import example from "@limitplane/enforcer/example-policy.json";
import type { TPolicyDocumentInput } from "@limitplane/enforcer/policy";
import { systemActor } from "../lib/control/change-context";
import type { ControlDeps } from "../lib/control/deps";
import { importPolicy } from "../lib/control/policy/import-policy";
import { systemClock } from "../lib/server/composition";
import { getPrisma } from "../lib/server/db";
import { EnvError, loadEnv } from "../lib/server/env";
import { createRedis } from "../lib/server/redis";

/** The example policy with every incident re-dated to start at `nowMs`, keeping its duration. */
export function examplePolicyForSeed(nowMs: number): TPolicyDocumentInput {
  const input = structuredClone(example) as TPolicyDocumentInput;
  for (const incident of input.incidentOverrides ?? []) {
    const durationMs = Date.parse(incident.expiresAt) - Date.parse(incident.startsAt);
    incident.startsAt = new Date(nowMs).toISOString();
    incident.expiresAt = new Date(nowMs + durationMs).toISOString();
  }
  return input;
}

export type SeedOutcome =
  | { readonly status: "seeded"; readonly policyVersion: number | null }
  | { readonly status: "skipped" };

/** Imports the example when there is no policy yet. */
export async function seedPolicy(deps: ControlDeps): Promise<SeedOutcome> {
  const existing = await deps.db.policySettings.findUnique({
    where: { id: 1 },
    select: { id: true },
  });
  if (existing !== null) return { status: "skipped" };
  const result = await importPolicy(
    examplePolicyForSeed(deps.clock.nowMs()),
    { actor: systemActor("seed"), reason: "initial seed" },
    deps,
  );
  return { status: "seeded", policyVersion: result.policyVersion };
}

async function main(): Promise<void> {
  const db = getPrisma();
  const redis = createRedis("control", { connectionName: "limitplane-seed" });
  const deps: ControlDeps = {
    db,
    publisher: { db, redis, prefix: loadEnv().REDIS_KEY_PREFIX, clock: systemClock },
    clock: systemClock,
    auditKey: loadEnv().AUDIT_KEY,
  };
  try {
    const outcome = await seedPolicy(deps);
    console.log(
      outcome.status === "seeded"
        ? `Seeded the example policy (version ${outcome.policyVersion}).`
        : "The database already has a policy; nothing seeded.",
    );
  } finally {
    await db.$disconnect();
    redis.disconnect();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  main().then(
    () => process.exit(0),
    (error: unknown) => {
      console.error(
        error instanceof EnvError
          ? error.message
          : `seed: ${error instanceof Error ? error.message : String(error)}`,
      );
      process.exit(1);
    },
  );
}
