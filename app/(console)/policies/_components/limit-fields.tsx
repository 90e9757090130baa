"use client";

import { type FieldPath, formatFieldPath } from "@limitplane/enforcer/policy";
import { formatAlgorithm } from "@/lib/console/format";
import {
  ALGORITHMS,
  type Algorithm,
  canBeGlobal,
  type FieldErrorMap,
  fieldNames,
  type LimitDraft,
  withAlgorithm,
  withGlobal,
} from "./limit-draft";
import styles from "./policy-form.module.css";
import { DURABILITY_WORDS, MODE_WORDS, ON_STORE_FAILURE_WORDS } from "./policy-words";

const ALGORITHM_HELP: Record<Algorithm, string> = {
  "token-bucket": "a sustained rate with room for bursts; what customers plan with",
  "leaky-meter": "like a token bucket, measured as a draining meter",
  "fixed-window": "N per window, reset at each window's start (allows 2N across a boundary)",
  "sliding-log": "N in any rolling window, exact; costs memory per request",
  "sliding-window": "N in any rolling window, approximated from two counters",
};

export interface LimitFieldsProps {
  /** Names the group: "Account limit", "pro tier on reports". */
  legend: string;
  /** The API path of this limit, e.g. `["limit"]` or `["limits", "pro"]`; errors are keyed by it. */
  path: FieldPath;
  draft: LimitDraft;
  errors: FieldErrorMap;
  onChange: (draft: LimitDraft) => void;
  disabled?: boolean;
  /** Id prefix for the inputs, unique on the page. */
  idPrefix: string;
  /** Show mode and failure policy (a dry-run candidate has neither). @default true */
  showBehaviour?: boolean;
  /**
   * Offer `global` (tier limits, per-endpoint tier limits and ceilings other than the per-address
   * one); shown while the algorithm is token-bucket. @default false
   */
  isGlobalAllowed?: boolean;
}

/** Where the docs explain global budgets (the console serves no docs, so it names the page). */
export const GLOBAL_BUDGETS_DOCS = "docs/regions.md#global-budgets";

/** The inputs of one limit: algorithm, its two numbers, mode and failure policy. */
export function LimitFields({
  legend,
  path,
  draft,
  errors,
  onChange,
  disabled,
  idPrefix,
  showBehaviour = true,
  isGlobalAllowed = false,
}: LimitFieldsProps) {
  const names = fieldNames(draft.algorithm);
  const errorAt = (field: string) => errors[formatFieldPath([...path, field])];
  const groupError = errors[formatFieldPath(path)];
  const set = (patch: Partial<LimitDraft>) => onChange({ ...draft, ...patch });
  const sizeLabel =
    names.size === "capacity"
      ? "Burst (capacity)"
      : names.size === "burst"
        ? "Burst"
        : "Requests per window";
  return (
    <fieldset className={styles.limitFields} disabled={disabled}>
      <legend>{legend}</legend>
      {groupError ? (
        <p className={styles.fieldError} role="alert">
          {groupError}
        </p>
      ) : null}
      <div className={styles.fieldRow}>
        <Field
          id={`${idPrefix}-algorithm`}
          label="Algorithm"
          help={ALGORITHM_HELP[draft.algorithm]}
          error={errorAt("algorithm")}
        >
          <select
            id={`${idPrefix}-algorithm`}
            value={draft.algorithm}
            onChange={(event) => onChange(withAlgorithm(draft, event.target.value as Algorithm))}
          >
            {ALGORITHMS.map((algorithm) => (
              <option key={algorithm} value={algorithm}>
                {formatAlgorithm(algorithm)}
              </option>
            ))}
          </select>
        </Field>
        <Field
          id={`${idPrefix}-size`}
          label={sizeLabel}
          help="Units of cost; most endpoints cost 1 per request."
          error={errorAt(names.size)}
        >
          <input
            id={`${idPrefix}-size`}
            inputMode="numeric"
            value={draft.size}
            onChange={(event) => set({ size: event.target.value })}
            aria-invalid={errorAt(names.size) ? true : undefined}
            aria-describedby={errorAt(names.size) ? `${idPrefix}-size-error` : undefined}
          />
        </Field>
        {names.usesWindow ? (
          <Field
            id={`${idPrefix}-window`}
            label="Window (seconds)"
            help="60 is one minute."
            error={errorAt("windowMs")}
          >
            <input
              id={`${idPrefix}-window`}
              inputMode="decimal"
              value={draft.windowSec}
              onChange={(event) => set({ windowSec: event.target.value })}
              aria-invalid={errorAt("windowMs") ? true : undefined}
              aria-describedby={errorAt("windowMs") ? `${idPrefix}-window-error` : undefined}
            />
          </Field>
        ) : (
          <Field
            id={`${idPrefix}-rate`}
            label="Sustained rate (per second)"
            help="Fractions are fine: 0.5 is 30 per minute."
            error={errorAt(names.second)}
          >
            <input
              id={`${idPrefix}-rate`}
              inputMode="decimal"
              value={draft.ratePerSec}
              onChange={(event) => set({ ratePerSec: event.target.value })}
              aria-invalid={errorAt(names.second) ? true : undefined}
              aria-describedby={errorAt(names.second) ? `${idPrefix}-rate-error` : undefined}
            />
          </Field>
        )}
      </div>
      {showBehaviour ? (
        <div className={styles.fieldRow}>
          <ChoiceField
            id={`${idPrefix}-mode`}
            label="Mode"
            error={errorAt("mode")}
            value={draft.mode}
            words={MODE_WORDS}
            onChange={(mode) => set({ mode })}
          />
          <ChoiceField
            id={`${idPrefix}-failure`}
            label="If Redis is down"
            error={errorAt("onStoreFailure")}
            value={draft.onStoreFailure}
            words={ON_STORE_FAILURE_WORDS}
            onChange={(onStoreFailure) => set({ onStoreFailure })}
          />
          <ChoiceField
            id={`${idPrefix}-durability`}
            label="Across a Redis failover"
            error={errorAt("durability")}
            value={draft.durability}
            words={DURABILITY_WORDS}
            onChange={(durability) => set({ durability })}
          />
        </div>
      ) : null}
      {isGlobalAllowed && canBeGlobal(draft.algorithm) ? (
        <div className={styles.fieldRow}>
          <CheckboxField
            id={`${idPrefix}-global`}
            label="Global across regions (one budget divided among regions by demand)"
            help={`Each region enforces its share of this limit, not all of it; see ${GLOBAL_BUDGETS_DOCS}`}
            error={errorAt("global")}
            isChecked={draft.global === true}
            onChange={(isGlobal) => onChange(withGlobal(draft, isGlobal))}
          />
        </div>
      ) : errorAt("global") ? (
        <p className={styles.fieldError} data-testid={`${idPrefix}-global-error`}>
          {errorAt("global")}
        </p>
      ) : null}
    </fieldset>
  );
}

/** A select of one of `words`' keys, each shown in its words; the error sits at the field. */
function ChoiceField<Value extends string>({
  id,
  label,
  error,
  value,
  words,
  onChange,
}: {
  id: string;
  label: string;
  error: string | undefined;
  value: Value;
  words: Readonly<Record<Value, string>>;
  onChange: (value: Value) => void;
}) {
  return (
    <Field id={id} label={label} error={error}>
      <select
        id={id}
        value={value}
        onChange={(event) => onChange(event.target.value as Value)}
        aria-invalid={error ? true : undefined}
        aria-describedby={error ? `${id}-error` : undefined}
      >
        {(Object.keys(words) as Value[]).map((key) => (
          <option key={key} value={key}>
            {words[key]}
          </option>
        ))}
      </select>
    </Field>
  );
}

export function Field({
  id,
  label,
  help,
  error,
  children,
}: {
  id: string;
  label: string;
  help?: string;
  error?: string;
  children: React.ReactNode;
}) {
  return (
    <div className={styles.field}>
      <label htmlFor={id}>{label}</label>
      {children}
      {error ? (
        <span className={styles.fieldError} id={`${id}-error`} data-testid={`${id}-error`}>
          {error}
        </span>
      ) : help ? (
        <span className="muted small">{help}</span>
      ) : null}
    </div>
  );
}

/** A checkbox with its label, and under it its help or, after a refusal, what is wrong. */
export function CheckboxField({
  id,
  label,
  help,
  error,
  isChecked,
  onChange,
}: {
  id: string;
  label: string;
  help: string;
  error?: string;
  isChecked: boolean;
  onChange: (isChecked: boolean) => void;
}) {
  return (
    <div className={styles.field}>
      <label htmlFor={id}>
        <input
          id={id}
          type="checkbox"
          checked={isChecked}
          onChange={(event) => onChange(event.target.checked)}
        />{" "}
        {label}
      </label>
      {error ? (
        <span className={styles.fieldError}>{error}</span>
      ) : (
        <span className="muted small">{help}</span>
      )}
    </div>
  );
}
