/**
 * A limit as a form holds it (text in inputs, any algorithm's fields kept while switching) and its
 * conversion to the value the API takes. Validation is the domain schema itself (ZPolicyLimit), so
 * the form says exactly what the API would, before anything is sent.
 */
import {
  ALGORITHMS,
  type FieldPath,
  fieldErrorsFromZod,
  formatFieldPath,
  type TDurability,
  type TLimitSpec,
  type TOnStoreFailure,
  type TPolicyLimit,
  type TPolicyMode,
  ZLimitSpec,
  ZPolicyLimit,
} from "@limitplane/enforcer/policy";

export type Algorithm = (typeof ALGORITHMS)[number];

export interface LimitDraft {
  readonly algorithm: Algorithm;
  /** capacity / burst / limit, as typed. */
  readonly size: string;
  /** refillPerSec / drainPerSec, as typed. */
  readonly ratePerSec: string;
  /** windowMs in seconds, as typed (people think in seconds). */
  readonly windowSec: string;
  readonly mode: TPolicyMode;
  readonly onStoreFailure: TOnStoreFailure;
  /** `async` stands for the field left out (the default). */
  readonly durability: TDurability;
  /**
   * One budget divided among the regions (docs/regions.md, "Global budgets"); left out for a limit
   * each region enforces in full. Token-bucket only: {@link withAlgorithm} clears it.
   */
  readonly global?: boolean;
}

/** Whether a limit of `algorithm` can be global (the schema refuses any other algorithm). */
export function canBeGlobal(algorithm: Algorithm): boolean {
  return algorithm === "token-bucket";
}

/** The draft switched to `algorithm`; a switch away from token-bucket drops `global`. */
export function withAlgorithm(draft: LimitDraft, algorithm: Algorithm): LimitDraft {
  if (canBeGlobal(algorithm) || draft.global !== true) return { ...draft, algorithm };
  const { global: _global, ...rest } = draft;
  return { ...rest, algorithm };
}

/** The draft marked global, or with the mark left out (the schema refuses `global: false`). */
export function withGlobal(draft: LimitDraft, isGlobal: boolean): LimitDraft {
  if (isGlobal) return { ...draft, global: true };
  const { global: _global, ...rest } = draft;
  return rest;
}

/** The API's field names for one algorithm: which draft field each comes from. */
export function fieldNames(algorithm: Algorithm): {
  readonly size: string;
  readonly second: string;
  readonly usesWindow: boolean;
} {
  switch (algorithm) {
    case "token-bucket":
      return { size: "capacity", second: "refillPerSec", usesWindow: false };
    case "leaky-meter":
      return { size: "burst", second: "drainPerSec", usesWindow: false };
    case "fixed-window":
    case "sliding-log":
    case "sliding-window":
      return { size: "limit", second: "windowMs", usesWindow: true };
    default: {
      const unknown: never = algorithm;
      throw new Error(`unknown algorithm ${String(unknown)}`);
    }
  }
}

export function draftOf(limit: TPolicyLimit): LimitDraft {
  const base = {
    algorithm: limit.algorithm,
    mode: limit.mode,
    onStoreFailure: limit.onStoreFailure,
    durability: limit.durability ?? "async",
    ...(limit.global === true ? { global: true } : {}),
  };
  switch (limit.algorithm) {
    case "token-bucket":
      return {
        ...base,
        size: String(limit.capacity),
        ratePerSec: String(limit.refillPerSec),
        windowSec: "60",
      };
    case "leaky-meter":
      return {
        ...base,
        size: String(limit.burst),
        ratePerSec: String(limit.drainPerSec),
        windowSec: "60",
      };
    default:
      return {
        ...base,
        size: String(limit.limit),
        ratePerSec: "1",
        windowSec: String(limit.windowMs / 1000),
      };
  }
}

/** A new limit's starting draft. */
export function emptyDraft(onStoreFailure: TOnStoreFailure): LimitDraft {
  return {
    algorithm: "token-bucket",
    size: "",
    ratePerSec: "",
    windowSec: "60",
    mode: "enforce",
    onStoreFailure,
    durability: "async",
  };
}

/** Text to number; empty text stays missing, so the schema says "is required". */
function numberOf(text: string): number | undefined {
  const trimmed = text.trim();
  if (trimmed === "") return undefined;
  return Number(trimmed);
}

/** The object sent to the API (unvalidated). */
export function limitInputOf(draft: LimitDraft): Record<string, unknown> {
  const names = fieldNames(draft.algorithm);
  const window = numberOf(draft.windowSec);
  return {
    algorithm: draft.algorithm,
    [names.size]: numberOf(draft.size),
    [names.second]: names.usesWindow
      ? window === undefined
        ? undefined
        : Math.round(window * 1000)
      : numberOf(draft.ratePerSec),
    mode: draft.mode,
    onStoreFailure: draft.onStoreFailure,
    // Left out when async (the default), so a limit saved without the option stays as it was.
    ...(draft.durability === "async" ? {} : { durability: draft.durability }),
    ...(draft.global === true ? { global: true } : {}),
  };
}

/** Field errors by path text (`limit.capacity`), as the API names them. */
export type FieldErrorMap = Readonly<Record<string, string>>;

/** Validates a draft with the domain schema; errors are keyed under `prefix`. */
export function validateDraft(
  draft: LimitDraft,
  prefix: FieldPath,
): { readonly limit: TPolicyLimit | null; readonly errors: FieldErrorMap } {
  const parsed = ZPolicyLimit.safeParse(limitInputOf(draft));
  if (parsed.success) return { limit: parsed.data, errors: {} };
  const errors: Record<string, string> = {};
  for (const error of fieldErrorsFromZod(parsed.error, prefix)) {
    const key = formatFieldPath(error.path);
    errors[key] ??= error.message.replace(/^windowMs/, "window");
  }
  return { limit: null, errors };
}

/** Validates a draft as a bare limit (a dry-run candidate's: no mode, no failure policy). */
export function validateSpecDraft(
  draft: LimitDraft,
  prefix: FieldPath,
): { readonly limit: TLimitSpec | null; readonly errors: FieldErrorMap } {
  const {
    mode: _mode,
    onStoreFailure: _onStoreFailure,
    durability: _durability,
    global: _global,
    ...input
  } = limitInputOf(draft);
  const parsed = ZLimitSpec.safeParse(input);
  if (parsed.success) return { limit: parsed.data, errors: {} };
  const errors: Record<string, string> = {};
  for (const error of fieldErrorsFromZod(parsed.error, prefix)) {
    errors[formatFieldPath(error.path)] ??= error.message.replace(/^windowMs/, "window");
  }
  return { limit: null, errors };
}

/** A draft from a bare limit spec. */
export function draftOfSpec(limit: TLimitSpec): LimitDraft {
  return draftOf({ ...limit, mode: "enforce", onStoreFailure: "open" });
}

export { ALGORITHMS };
