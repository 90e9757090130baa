"use client";

import { reasonProblem } from "@/lib/console/reason";
import styles from "./ops.module.css";

export interface ReasonFieldProps {
  id: string;
  label: string;
  value: string;
  onChange: (value: string) => void;
  /** Show what is wrong even before the person has typed (after a refused attempt). */
  showProblem: boolean;
  /** Says what the reason is for, under the field. */
  hint: string;
}

/**
 * A required, empty-by-default reason: a person types why, so the audit log never fills with
 * boilerplate. Checked as the control plane checks it (lib/console/reason.ts); the problem shows
 * once the field has been typed in or an action was tried.
 */
export function ReasonField({ id, label, value, onChange, showProblem, hint }: ReasonFieldProps) {
  const problem = reasonProblem(value);
  const isShown = problem !== null && (showProblem || value !== "");
  return (
    <div className={styles.field} data-invalid={isShown}>
      <label htmlFor={id}>{label} (required)</label>
      <input
        id={id}
        value={value}
        maxLength={1000}
        required
        aria-invalid={isShown}
        aria-describedby={`${id}-hint`}
        onChange={(event) => onChange(event.target.value)}
      />
      <p id={`${id}-hint`} className={isShown ? styles.fieldError : styles.hint}>
        {isShown ? problem : hint}
      </p>
    </div>
  );
}

export { reasonProblem };
