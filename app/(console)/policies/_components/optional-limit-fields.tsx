"use client";

import type { FieldPath } from "@limitplane/enforcer/policy";
import type { FieldErrorMap, LimitDraft } from "./limit-draft";
import { LimitFields } from "./limit-fields";
import styles from "./policy-form.module.css";

/** A limit that may be absent: a checkbox to have it, then its fields. */
export function OptionalLimitFields({
  legend,
  absentText,
  path,
  draft,
  isOn,
  errors,
  onChange,
  onToggle,
  idPrefix,
  isGlobalAllowed = false,
}: {
  legend: string;
  /** What having none means, e.g. "only the tier's account limit applies". */
  absentText: string;
  path: FieldPath;
  draft: LimitDraft;
  isOn: boolean;
  errors: FieldErrorMap;
  onChange: (draft: LimitDraft) => void;
  onToggle: (isOn: boolean) => void;
  idPrefix: string;
  /** Offer `global` (see LimitFields). @default false */
  isGlobalAllowed?: boolean;
}) {
  return (
    <div className={styles.optionalLimit}>
      <label className={styles.toggle}>
        <input
          type="checkbox"
          checked={isOn}
          onChange={(event) => onToggle(event.target.checked)}
        />{" "}
        {legend}
      </label>
      {isOn ? (
        <LimitFields
          legend="Its values"
          path={path}
          draft={draft}
          errors={errors}
          onChange={onChange}
          idPrefix={idPrefix}
          isGlobalAllowed={isGlobalAllowed}
        />
      ) : (
        <p className="muted small">{absentText}</p>
      )}
    </div>
  );
}
