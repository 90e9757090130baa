"use client";

import type { FieldErrorMap } from "./limit-draft";
import { Field } from "./limit-fields";
import styles from "./policy-form.module.css";
import type { StagedStepDraft, StagingDraft } from "./staged-steps-draft";

/**
 * How an edit applies: now, to everyone; or as a staged change over a slice of subjects that
 * widens step by step under its guard. `unavailable` says why this edit cannot be staged (it
 * changes more than one rule, or the mode or failure policy), and the choice is then not offered.
 */
export function StagingFields({
  draft,
  onChange,
  errors,
  unavailable,
  idPrefix,
}: {
  draft: StagingDraft;
  onChange: (draft: StagingDraft) => void;
  errors: FieldErrorMap;
  unavailable: string | null;
  idPrefix: string;
}) {
  return (
    <fieldset className={styles.limitFields} data-testid="staging-fields">
      <legend>How to apply it</legend>
      <div className={styles.actions} role="radiogroup" aria-label="How to apply it">
        <label>
          <input
            type="radio"
            name={`${idPrefix}-how`}
            checked={!draft.isStaged || unavailable !== null}
            onChange={() => onChange({ ...draft, isStaged: false })}
          />{" "}
          Apply now, to everyone
        </label>
        <label>
          <input
            type="radio"
            name={`${idPrefix}-how`}
            checked={draft.isStaged && unavailable === null}
            disabled={unavailable !== null}
            onChange={() => onChange({ ...draft, isStaged: true })}
          />{" "}
          Stage it over a slice of subjects
        </label>
      </div>
      {unavailable !== null ? (
        <p className="muted small" data-testid="staging-unavailable">
          Cannot be staged: {unavailable}
        </p>
      ) : null}
      {draft.isStaged && unavailable === null ? (
        <StagedStepsEditor draft={draft} onChange={onChange} errors={errors} idPrefix={idPrefix} />
      ) : null}
    </fieldset>
  );
}

/**
 * The steps of a staged change, as typed: each a percent of subjects and a dwell in minutes, with
 * steps added before the last (100 %) or removed.
 */
export function StagedStepsEditor({
  draft,
  onChange,
  errors,
  idPrefix,
}: {
  draft: StagingDraft;
  onChange: (draft: StagingDraft) => void;
  errors: FieldErrorMap;
  idPrefix: string;
}) {
  const setStep = (index: number, patch: Partial<StagedStepDraft>) =>
    onChange({
      ...draft,
      steps: draft.steps.map((step, at) => (at === index ? { ...step, ...patch } : step)),
    });
  return (
    <>
      <p className="muted small">
        Each step puts that share of customers (and addresses) under the new limit, chosen by a
        stable hash, and holds at least its dwell time; the last step is 100 %. The guard reverts it
        by itself if the slice&apos;s rejection rate runs above the rest&apos;s.
      </p>
      {errors.steps ? (
        <p className={styles.fieldError} role="alert">
          {errors.steps}
        </p>
      ) : null}
      <ol className={styles.stepList}>
        {draft.steps.map((step, index) => (
          // Steps are edited in place and never reordered: the index is their identity.
          // biome-ignore lint/suspicious/noArrayIndexKey: see above
          <li key={index} className={styles.fieldRow}>
            <Field
              id={`${idPrefix}-step-${index}-percent`}
              label={`Step ${index + 1}: percent of subjects`}
              error={errors[`steps[${index}].percent`]}
            >
              <input
                id={`${idPrefix}-step-${index}-percent`}
                inputMode="decimal"
                value={step.percent}
                onChange={(event) => setStep(index, { percent: event.target.value })}
                aria-invalid={errors[`steps[${index}].percent`] ? true : undefined}
              />
            </Field>
            <Field
              id={`${idPrefix}-step-${index}-dwell`}
              label={`Step ${index + 1}: hold for at least (minutes)`}
              error={errors[`steps[${index}].dwellMs`]}
            >
              <input
                id={`${idPrefix}-step-${index}-dwell`}
                inputMode="decimal"
                value={step.dwellMinutes}
                onChange={(event) => setStep(index, { dwellMinutes: event.target.value })}
                aria-invalid={errors[`steps[${index}].dwellMs`] ? true : undefined}
              />
            </Field>
          </li>
        ))}
      </ol>
      <div className={styles.actions}>
        <button
          type="button"
          className="button button-secondary"
          disabled={draft.steps.length >= 10}
          onClick={() =>
            onChange({
              ...draft,
              steps: [
                ...draft.steps.slice(0, -1),
                { percent: "", dwellMinutes: "10" },
                ...draft.steps.slice(-1),
              ],
            })
          }
        >
          Add a step
        </button>
        <button
          type="button"
          className="button button-secondary"
          disabled={draft.steps.length <= 1}
          onClick={() =>
            onChange({
              ...draft,
              steps: [...draft.steps.slice(0, -2), ...draft.steps.slice(-1)],
            })
          }
        >
          Remove a step
        </button>
      </div>
    </>
  );
}
