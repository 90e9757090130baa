/**
 * The console's incident form and the service agree: every draft the form accepts, the service
 * raises; every draft it refuses, the service refuses at the same field with the same words.
 * The form's check (`checkIncidentDraft`) runs against the stored guardrails and the limit the
 * incident replaces, then the same body goes to `raiseIncident` against the real database.
 */
import type { LimitSpec } from "@limitplane/enforcer/limiter";
import { findReplacedLimit, parsePolicyDocument } from "@limitplane/enforcer/policy";
import { beforeAll, describe, expect, it } from "vitest";
import {
  checkIncidentDraft,
  groupByField,
  type IncidentDraft,
  type IncidentFieldErrors,
  raiseBodyOf,
} from "@/app/(console)/incidents/new/incident-form-check";
import { createCustomer } from "@/lib/control/customer/create-customer";
import type { ControlDeps } from "@/lib/control/deps";
import { isAppError } from "@/lib/control/errors";
import { raiseIncident } from "@/lib/control/incident/raise-incident";
import { readStoredPolicy } from "@/lib/control/policy/stored-policy";
import { getPolicySettings } from "@/lib/control/settings/get-policy-settings";
import {
  depsFor,
  importExamplePolicy,
  operatorContext,
  uniqueName,
} from "./helpers/policy-fixtures";
import { provideTestDatabase } from "./helpers/test-database";

const HOUR_MS = 3_600_000;
const database = provideTestDatabase();
let deps: ControlDeps;

beforeAll(async () => {
  deps = depsFor(database.current().db);
  await importExamplePolicy(deps);
});

const CASES: readonly (readonly [string, Partial<IncidentDraft>])[] = [
  ["a factor within the guardrails", {}],
  ["one second", { durationMs: 1_000 }],
  ["half a minute", { durationMs: 30_000 }],
  ["under one second", { durationMs: 999 }],
  ["a fraction of a millisecond", { durationMs: 1_500.5 }],
  ["longer than the guardrail", { durationMs: 25 * HOUR_MS }],
  ["a factor beyond the guardrail", { factor: 50 }],
  ["a cut beyond the guardrail", { factor: 0.05 }],
  ["a factor of 0", { factor: 0 }],
  [
    "an absolute limit within the guardrails",
    { mode: "limit", limit: { algorithm: "token-bucket", capacity: 400, refillPerSec: 300 } },
  ],
  [
    "a rate beyond the guardrail",
    { mode: "limit", limit: { algorithm: "token-bucket", capacity: 400, refillPerSec: 6_000 } },
  ],
  ["an empty reason", { reason: "  " }],
  ["a reason of 1000 characters", { reason: "r".repeat(1000) }],
  ["a reason of 1001 characters", { reason: "r".repeat(1001) }],
  ["a reason on two lines", { reason: "two\nlines" }],
  ["a ticket link that is not http", { ticketUrl: "ftp://tickets.example/1" }],
];

async function serverVerdict(draft: IncidentDraft): Promise<IncidentFieldErrors | "raised"> {
  const { reason, ...options } = raiseBodyOf(draft);
  try {
    await raiseIncident(
      options as Parameters<typeof raiseIncident>[0],
      { ...operatorContext(), reason: reason as string },
      deps,
    );
    return "raised";
  } catch (error: unknown) {
    if (!isAppError(error)) throw error;
    return groupByField(error.fieldErrors);
  }
}

describe("the incident form and raiseIncident", () => {
  it.each(CASES)("agree on %s", async (_name, change) => {
    const { db } = database.current();
    const customerId = uniqueName("form-agree");
    await createCustomer(
      { id: customerId, displayName: "Form", tier: "pro" },
      operatorContext(),
      deps,
    );
    const stored = await readStoredPolicy(db, { nowMs: deps.clock.nowMs(), customers: "all" });
    if (stored === null) throw new Error("no policy stored");
    const document = parsePolicyDocument(stored.input);
    if (!document.ok) throw new Error("the stored policy does not parse");
    const replacedLimit: LimitSpec | null = findReplacedLimit(document.value, customerId, null);
    const settings = await getPolicySettings(deps);
    const draft: IncidentDraft = {
      customerId,
      endpointClass: null,
      mode: "factor",
      factor: 3,
      limit: null,
      durationMs: 15 * 60_000,
      reason: "form and service agree",
      ticketUrl: "",
      ...change,
    };
    const formErrors = checkIncidentDraft(draft, {
      guardrails: settings.guardrails,
      replacedLimit,
      nowMs: deps.clock.nowMs(),
    });
    const verdict = await serverVerdict(draft);
    if (Object.keys(formErrors).length === 0) expect(verdict).toBe("raised");
    else expect(verdict).toEqual(formErrors);
  });
});
