"use client";

import { useRouter } from "next/navigation";
import { useId, useState } from "react";
import { ReasonField, reasonProblem } from "@/components/ops/reason-field";
import { callApi } from "@/lib/api/api-client";
import { CheckboxField, Field } from "../_components/limit-fields";
import styles from "../_components/policy-form.module.css";

/** One setting as the form shows it: a checkbox, or a number shown in `unit` (÷ `scale`). */
export type SettingField =
  | {
      readonly name: string;
      readonly kind: "boolean";
      readonly label: string;
      readonly help: string;
    }
  | {
      readonly name: string;
      readonly kind: "number";
      readonly label: string;
      readonly help: string;
      /** The API's value is the shown one times this (60_000 to show minutes of ms). @default 1 */
      readonly scale?: number;
    };

type Values = Readonly<Record<string, string | boolean>>;

function shownValues(fields: readonly SettingField[], values: Readonly<Record<string, unknown>>) {
  return Object.fromEntries(
    fields.map((field) => {
      const value = values[field.name];
      return [
        field.name,
        field.kind === "boolean" ? value === true : String(Number(value) / (field.scale ?? 1)),
      ];
    }),
  );
}

/**
 * A settings row edited through PATCH with the version the page read and a reason: the fields
 * that differ from what is stored are sent, a refusal (a field out of range, approvals without a
 * second approver, someone else's change meanwhile) is shown in the API's words, at the field
 * when it names one.
 */
export function SettingsPatchForm({
  saveUrl,
  version,
  fields,
  values,
  label,
  saveLabel,
}: {
  saveUrl: string;
  version: number;
  fields: readonly SettingField[];
  /** As the API answers them. */
  values: Readonly<Record<string, unknown>>;
  /** Names the form, e.g. "Approval settings". */
  label: string;
  saveLabel: string;
}) {
  const router = useRouter();
  const prefix = useId();
  const initial: Values = shownValues(fields, values);
  const [draft, setDraft] = useState<Values>(initial);
  const [reason, setReason] = useState("");
  const [isTried, setIsTried] = useState(false);
  const [isPending, setIsPending] = useState(false);
  const [message, setMessage] = useState<string | null>(null);
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [isSaved, setIsSaved] = useState(false);

  const onSave = async () => {
    setIsTried(true);
    setIsSaved(false);
    if (reasonProblem(reason) !== null) {
      document.getElementById(`${prefix}-reason`)?.focus();
      return;
    }
    const body: Record<string, unknown> = {};
    const nextErrors: Record<string, string> = {};
    for (const field of fields) {
      const value = draft[field.name];
      if (value === initial[field.name]) continue;
      if (field.kind === "boolean") {
        body[field.name] = value === true;
        continue;
      }
      const number = typeof value === "string" && value.trim() !== "" ? Number(value) : Number.NaN;
      if (!Number.isFinite(number)) nextErrors[field.name] = `${field.label} must be a number.`;
      else body[field.name] = Math.round(number * (field.scale ?? 1) * 1000) / 1000;
    }
    setErrors(nextErrors);
    if (Object.keys(nextErrors).length > 0) {
      setMessage("Fix the fields marked below.");
      return;
    }
    if (Object.keys(body).length === 0) {
      setMessage("Nothing changed: change a setting first.");
      return;
    }
    setIsPending(true);
    setMessage(null);
    try {
      const answer = await callApi(saveUrl, {
        method: "PATCH",
        body: { ...body, expectedVersion: version, reason: reason.trim() },
      });
      if (answer.ok) {
        setReason("");
        setIsTried(false);
        setIsSaved(true);
        router.refresh();
        return;
      }
      const { error } = answer;
      setErrors(Object.fromEntries(error.fieldErrors.map((item) => [item.path, item.message])));
      setMessage(error.message);
    } catch {
      setMessage("The console did not answer. Reload to see the settings as they stand.");
    } finally {
      setIsPending(false);
    }
  };

  return (
    <form
      className={styles.form}
      noValidate
      aria-label={label}
      onSubmit={(event) => {
        event.preventDefault();
        void onSave();
      }}
    >
      {message !== null ? (
        <p className={styles.formError} role="alert" data-testid="settings-error">
          {message}
        </p>
      ) : null}
      {isSaved ? (
        <p className={styles.saved} role="status" data-testid="settings-saved">
          <strong>Saved.</strong> The change is in the audit log.
        </p>
      ) : null}
      <div className={styles.fieldRow}>
        {fields.map((field) => {
          const id = `${prefix}-${field.name}`;
          const value = draft[field.name];
          return field.kind === "boolean" ? (
            <CheckboxField
              key={field.name}
              id={id}
              label={field.label}
              help={field.help}
              error={errors[field.name]}
              isChecked={value === true}
              onChange={(isChecked) => setDraft({ ...draft, [field.name]: isChecked })}
            />
          ) : (
            <Field
              key={field.name}
              id={id}
              label={field.label}
              help={field.help}
              error={errors[field.name]}
            >
              <input
                id={id}
                inputMode="decimal"
                value={typeof value === "string" ? value : ""}
                aria-invalid={errors[field.name] ? true : undefined}
                onChange={(event) => setDraft({ ...draft, [field.name]: event.target.value })}
              />
            </Field>
          );
        })}
      </div>
      <ReasonField
        id={`${prefix}-reason`}
        label="Reason"
        value={reason}
        onChange={setReason}
        showProblem={isTried}
        hint="Why you change these settings: kept in the audit log."
      />
      <div className={styles.actions}>
        <button type="submit" className="button" disabled={isPending} aria-busy={isPending}>
          {isPending ? "Saving…" : saveLabel}
        </button>
      </div>
    </form>
  );
}
