/**
 * The staging choice of an edit form, as typed: apply now, or stage over a slice with steps of a
 * percent and a dwell in minutes. Parsed with the API's own schema (staged-steps.ts), errors keyed
 * `steps[1].percent` as the API keys them. Pure: the form is client code.
 */
import {
  canonicalJson,
  fieldErrorsFromZod,
  formatFieldPath,
  type TLimitSpec,
  type TPolicyLimit,
} from "@limitplane/enforcer/policy";
import { type TStagedStep, ZStagedSteps } from "@/lib/control/staged-change/staged-steps";
import type { FieldErrorMap } from "./limit-draft";

export interface StagedStepDraft {
  readonly percent: string;
  readonly dwellMinutes: string;
}

export interface StagingDraft {
  readonly isStaged: boolean;
  readonly steps: readonly StagedStepDraft[];
}

/** 5 % → 25 % → 100 %, ten minutes each: the example, slow enough for the guard to judge. */
export const DEFAULT_STAGING: StagingDraft = {
  isStaged: false,
  steps: [
    { percent: "5", dwellMinutes: "10" },
    { percent: "25", dwellMinutes: "10" },
    { percent: "100", dwellMinutes: "10" },
  ],
};

function numberOf(text: string): number {
  return text.trim() === "" ? Number.NaN : Number(text);
}

/** The steps as the API takes them, or the errors at each field. */
export function parseStagedSteps(draft: StagingDraft): {
  readonly steps: TStagedStep[] | null;
  readonly errors: FieldErrorMap;
} {
  const errors: Record<string, string> = {};
  const input = draft.steps.map((step, index) => {
    const percent = numberOf(step.percent);
    const minutes = numberOf(step.dwellMinutes);
    if (!Number.isFinite(percent)) errors[`steps[${index}].percent`] = "Give a percent, e.g. 25.";
    if (!Number.isFinite(minutes) || minutes <= 0) {
      errors[`steps[${index}].dwellMs`] = "Give the minutes to hold this step, e.g. 10.";
    }
    return { percent, dwellMs: Math.round(minutes * 60_000) };
  });
  if (Object.keys(errors).length > 0) return { steps: null, errors };
  const parsed = ZStagedSteps.safeParse(input);
  if (parsed.success) return { steps: parsed.data, errors: {} };
  for (const error of fieldErrorsFromZod(parsed.error, ["steps"])) {
    errors[formatFieldPath(error.path)] ??= error.message;
  }
  return { steps: null, errors };
}

/** One rule an edit may change: its scope, and its limit before and after (null: none). */
export interface RuleEdit {
  readonly target: string;
  readonly before: TPolicyLimit | null;
  readonly after: TPolicyLimit | null;
}

export type StageOfEdit =
  | { readonly target: string; readonly limit: TLimitSpec }
  | { readonly unavailable: string };

function specOf(limit: TPolicyLimit): TLimitSpec {
  const {
    mode: _mode,
    onStoreFailure: _onStoreFailure,
    durability: _durability,
    global: _global,
    ...spec
  } = limit;
  return spec as TLimitSpec;
}

/**
 * What an edit would stage: the one rule whose limit it changes, with the new limit; or why it
 * cannot be staged. A staged change carries one limit onto an existing rule, so an edit that
 * changes several rules, anything besides limits (`otherChange`), a rule's mode, failure
 * policy or durability, or removes a limit is applied at once or split first.
 */
export function stageOfEdit(
  edits: readonly RuleEdit[],
  otherChange: string | null = null,
): StageOfEdit {
  const changed = edits.filter((edit) => canonicalJson(edit.before) !== canonicalJson(edit.after));
  if (otherChange !== null) {
    return { unavailable: `it also changes ${otherChange}; only a limit can be staged.` };
  }
  if (changed.length === 0) return { unavailable: "no limit changes yet." };
  if (changed.length > 1) {
    return {
      unavailable: `it changes ${changed.length} limits and a staged change carries one; save them one at a time.`,
    };
  }
  const [edit] = changed;
  if (edit === undefined || edit.after === null) {
    return { unavailable: "it removes a limit; a staged change replaces one." };
  }
  const before = edit.before;
  if (edit.after.global === true || before?.global === true) {
    return {
      unavailable:
        "it changes a global limit, whose staged slice would be enforced per region; save it at once.",
    };
  }
  if (
    (before === null &&
      (edit.after.mode !== "enforce" || edit.after.durability === "replicated")) ||
    (before !== null &&
      (before.mode !== edit.after.mode ||
        before.onStoreFailure !== edit.after.onStoreFailure ||
        (before.durability ?? "async") !== (edit.after.durability ?? "async")))
  ) {
    return {
      unavailable:
        "it changes the mode, the failure policy or the durability, which a staged change keeps as they are.",
    };
  }
  return { target: edit.target, limit: specOf(edit.after) };
}
