/**
 * The preview of the edits that add or remove policy entities, or change the guardrails: creating
 * a tier or an endpoint class, deleting one, editing `guardrails`. Like `previewPolicyChange`
 * (whose result shape it returns, so the console shows both the same way) it writes nothing and
 * validates the edit as the service will: its own fields with the same schemas, then the whole
 * policy it would make (a guardrail below a current incident, a match rule another class has),
 * with each problem at the caller's field.
 *
 * A deletion's preview names everything that refers to the entity (the same words the deletion's
 * refusal uses: `findTierReferrers`, `findEndpointClassReferrers`); while any does, it is blocked.
 */
import {
  diffPolicyRules,
  type FieldChange,
  fieldErrorsFromZod,
  type PolicyRules,
  parsePolicyDocument,
  ZEndpointClass,
  ZTier,
} from "@limitplane/enforcer/policy";
import { z } from "zod";
import type { ClockedReadDeps, ReadDeps } from "../deps";
import { findEndpointClassReferrers } from "../endpoint-class/delete-endpoint-class";
import { AppError, notFound, toFieldErrors, validationError } from "../errors";
import { ZUpdatePolicySettingsOptions } from "../settings/update-policy-settings";
import { findTierReferrers } from "../tier/delete-tier";
import {
  type PolicyChangePreview,
  type PreviewedLimitChange,
  readPolicyRules,
} from "./preview-policy-change";
import { noPolicyYet } from "./run-policy-change";
import { type PolicyEntityRef, policyValidationError, readStoredPolicy } from "./stored-policy";

const guardrailsShape = ZUpdatePolicySettingsOptions.shape.guardrails.unwrap();

export const ZPreviewStructureChangeOptions = z.discriminatedUnion(
  "kind",
  [
    z.strictObject({ kind: z.literal("tier-create"), tier: ZTier }),
    z.strictObject({ kind: z.literal("endpoint-class-create"), endpointClass: ZEndpointClass }),
    z.strictObject({ kind: z.literal("tier-delete"), name: ZTier.shape.name }),
    z.strictObject({
      kind: z.literal("endpoint-class-delete"),
      name: ZEndpointClass.shape.name,
    }),
    z.strictObject({ kind: z.literal("guardrails"), guardrails: guardrailsShape }),
  ],
  {
    error:
      "kind must be one of: tier-create, endpoint-class-create, tier-delete, endpoint-class-delete, guardrails",
  },
);
export type PreviewStructureChangeOptions = z.input<typeof ZPreviewStructureChangeOptions>;

export interface StructureChangePreview extends PolicyChangePreview {
  /** What refers to the entity a deletion removes, in words; empty otherwise. */
  readonly referrers: readonly string[];
  /** True while the change would be refused for `referrers`. */
  readonly isBlocked: boolean;
}

/**
 * The preview of a creation, a deletion or a guardrails edit. VALIDATION_FAILED with field errors
 * for an invalid one; NOT_FOUND for deleting what does not exist; CONFLICT for creating what does.
 */
export async function previewStructureChange(
  options: PreviewStructureChangeOptions,
  deps: ClockedReadDeps,
): Promise<StructureChangePreview> {
  const parsed = ZPreviewStructureChangeOptions.safeParse(options);
  if (!parsed.success) {
    // At the fields of the entity as the create endpoints name them (`limit.capacity`, `name`).
    const errors = toFieldErrors(fieldErrorsFromZod(parsed.error)).map((error) => ({
      ...error,
      path: error.path.replace(/^(?:tier|endpointClass)\./, ""),
    }));
    throw validationError(errors);
  }
  const input = parsed.data;
  const nowMs = deps.clock.nowMs();
  const db = deps.db;
  const { tiers, classes, settings, rules: before } = await readPolicyRules(db);
  let after: PolicyRules = before;
  let subject: string;
  let version = 0;
  let referrers: string[] = [];
  const fields: FieldChange[] = [];
  let focus: PolicyEntityRef;
  let edit: (document: Record<string, unknown>) => Record<string, unknown>;
  const listOf = (document: Record<string, unknown>, key: string): Record<string, unknown>[] => {
    const value = document[key];
    return Array.isArray(value) ? (value as Record<string, unknown>[]) : [];
  };

  switch (input.kind) {
    case "tier-create": {
      const { tier } = input;
      subject = `tier "${tier.name}"`;
      if (tiers.some((existing) => existing.name === tier.name)) {
        throw alreadyExists(subject, "name");
      }
      after = { ...before, tiers: [...tiers, tier] };
      focus = { collection: "tiers", id: tier.name };
      edit = (document) => ({ ...document, tiers: [...listOf(document, "tiers"), tier] });
      break;
    }
    case "endpoint-class-create": {
      const { endpointClass } = input;
      subject = `endpoint class "${endpointClass.name}"`;
      if (classes.some((existing) => existing.name === endpointClass.name)) {
        throw alreadyExists(subject, "name");
      }
      after = { ...before, endpointClasses: [...classes, endpointClass] };
      fields.push({ owner: subject, field: "match", before: "(new)", after: endpointClass.match });
      fields.push({ owner: subject, field: "cost", before: "(new)", after: endpointClass.cost });
      focus = { collection: "endpointClasses", id: endpointClass.name };
      edit = (document) => ({
        ...document,
        endpointClasses: [...listOf(document, "endpointClasses"), endpointClass],
      });
      break;
    }
    case "tier-delete": {
      const tier = tiers.find((existing) => existing.name === input.name);
      if (tier === undefined) throw notFound("Tier", input.name);
      subject = `tier "${tier.name}"`;
      version = tier.version;
      referrers = await findTierReferrers(db, tier.name);
      after = { ...before, tiers: tiers.filter((existing) => existing.name !== tier.name) };
      focus = { collection: "tiers", id: tier.name };
      edit = (document) => ({
        ...document,
        tiers: listOf(document, "tiers").filter((entry) => entry.name !== tier.name),
      });
      break;
    }
    case "endpoint-class-delete": {
      const endpointClass = classes.find((existing) => existing.name === input.name);
      if (endpointClass === undefined) throw notFound("Endpoint class", input.name);
      subject = `endpoint class "${endpointClass.name}"`;
      version = endpointClass.version;
      referrers = await findEndpointClassReferrers(db, endpointClass.name, nowMs);
      after = {
        ...before,
        endpointClasses: classes.filter((existing) => existing.name !== endpointClass.name),
      };
      fields.push({
        owner: subject,
        field: "match",
        before: endpointClass.match,
        after: "(deleted: its requests go to the default class)",
      });
      focus = { collection: "endpointClasses", id: endpointClass.name };
      edit = (document) => ({
        ...document,
        endpointClasses: listOf(document, "endpointClasses").filter(
          (entry) => entry.name !== endpointClass.name,
        ),
      });
      break;
    }
    case "guardrails": {
      subject = "guardrails";
      version = settings.version;
      const next = { ...settings.guardrails, ...stripUndefined(input.guardrails) };
      for (const field of ["maxIncidentFactor", "maxIncidentDurationMs"] as const) {
        if (next[field] !== settings.guardrails[field]) {
          fields.push({
            owner: "guardrails",
            field,
            before: describeGuardrail(field, settings.guardrails[field]),
            after: describeGuardrail(field, next[field]),
          });
        }
      }
      focus = { collection: "settings" };
      edit = (document) => ({ ...document, guardrails: next });
      break;
    }
    default: {
      const unknownKind: never = input;
      throw new Error(`unknown preview kind ${JSON.stringify(unknownKind)}`);
    }
  }

  // A blocked deletion is refused for its referrers: the whole policy is not checked.
  if (referrers.length === 0) await checkEditedPolicy(db, focus, edit, nowMs);
  const diff = diffPolicyRules(before, after);
  const limits: PreviewedLimitChange[] = [];
  for (const change of diff.limits) {
    // A new or removed limit: no customer override can exist on a class or tier that does not
    // exist yet, and a deletion with any is blocked, so only how many it reaches is counted.
    const customersInScope =
      change.reach === "anonymous"
        ? null
        : change.reach === "ceiling"
          ? await db.customer.count()
          : await db.customer.count({ where: { tier: change.tier ?? "" } });
    limits.push({
      ...change,
      affected: {
        customersInScope,
        outrankedCount: 0,
        outranked: [],
        scaledByIncident: [],
        candidates: [],
      },
    });
  }
  const allFields = [...diff.fields, ...fields];
  return {
    subject,
    version,
    limits,
    fields: allFields,
    isNoChange: limits.length === 0 && allFields.length === 0 && !input.kind.endsWith("-delete"),
    referrers,
    isBlocked: referrers.length > 0,
  };
}

/** A guardrail in words: `×10`, `1440 min (24 h)`. */
function describeGuardrail(field: "maxIncidentFactor" | "maxIncidentDurationMs", value: number) {
  if (field === "maxIncidentFactor") return `×${value}`;
  const minutes = value / 60_000;
  return minutes >= 60 ? `${minutes} min (${minutes / 60} h)` : `${minutes} min`;
}

function stripUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(
    Object.entries(value).filter(([, entry]) => entry !== undefined),
  ) as Partial<T>;
}

function alreadyExists(subject: string, path: string): AppError {
  return new AppError("CONFLICT", `${subject} already exists; edit it instead.`, {
    fieldErrors: [{ path, message: `${subject} already exists` }],
  });
}

/** The stored policy with the edit applied, validated as a whole, as the service will. */
async function checkEditedPolicy(
  db: ReadDeps["db"],
  focus: PolicyEntityRef,
  edit: (document: Record<string, unknown>) => Record<string, unknown>,
  nowMs: number,
): Promise<void> {
  const stored = await readStoredPolicy(db, {
    nowMs,
    customers: "referenced",
    last: focus,
    scope: { kind: "core", overrideScopes: [] },
  });
  if (stored === null) throw noPolicyYet();
  const edited = edit({ ...stored.input });
  const parsed = parsePolicyDocument(edited);
  if (!parsed.ok) throw policyValidationError({ ...stored, input: edited }, parsed.errors, focus);
}
