"use client";

import type { TDescriptorRule } from "@limitplane/enforcer/policy";
import { useRouter } from "next/navigation";
import { useState } from "react";
import { callApi } from "@/lib/api/api-client";
import { reasonProblem } from "@/lib/console/reason";
import type { FieldErrorMap } from "../../policies/_components/limit-draft";
import { Field } from "../../policies/_components/limit-fields";
import styles from "../../policies/_components/policy-form.module.css";
import { formatLevels } from "./describe-rule-limit";

const DURATIONS: readonly { readonly label: string; readonly ms: number }[] = [
  { label: "30 minutes", ms: 30 * 60_000 },
  { label: "1 hour", ms: 3_600_000 },
  { label: "2 hours", ms: 7_200_000 },
  { label: "6 hours", ms: 21_600_000 },
  { label: "24 hours", ms: 86_400_000 },
];

/**
 * Raises the rule's limit for one descriptor value for a while ("raise `tenant=acme` by 3x for 2
 * hours"): one value per level of the pattern (a level with a value is filled in), a factor, a
 * duration and a reason. The API checks the guardrails; its field errors land at the field.
 */
export function DescriptorRaiseForm({
  ruleId,
  pattern,
}: {
  ruleId: string;
  pattern: TDescriptorRule["descriptor"];
}) {
  const router = useRouter();
  const [values, setValues] = useState<string[]>(
    pattern.map((level) => (level.value === null || level.value.endsWith("*") ? "" : level.value)),
  );
  const [factor, setFactor] = useState("2");
  const [durationMs, setDurationMs] = useState(7_200_000);
  const [reason, setReason] = useState("");
  const [errors, setErrors] = useState<FieldErrorMap>({});
  const [formError, setFormError] = useState<string | null>(null);
  const [raisedVersion, setRaisedVersion] = useState<number | null>(null);
  const [isPending, setIsPending] = useState(false);

  const raise = async () => {
    setFormError(null);
    setRaisedVersion(null);
    const found: Record<string, string> = {};
    values.forEach((value, index) => {
      if (value.trim() === "") found[`descriptor[${index}].value`] = "give the value to raise";
    });
    if (!(Number(factor) > 0)) found.factor = "factor must be a number more than 0";
    const reasonError = reasonProblem(reason, "Say why: the reason is kept in the audit log.");
    if (reasonError !== null) found.reason = reasonError;
    setErrors(found);
    if (Object.keys(found).length > 0) {
      setFormError("Correct the fields marked below.");
      return;
    }
    setIsPending(true);
    try {
      const result = await callApi<{ policyVersion: number | null }>(
        `/api/v1/descriptor-rules/${encodeURIComponent(ruleId)}/raises`,
        {
          method: "POST",
          body: {
            descriptor: pattern.map((level, index) => ({
              key: level.key,
              value: (values[index] ?? "").trim(),
            })),
            factor: Number(factor),
            durationMs,
            reason: reason.trim(),
          },
        },
      );
      if (result.ok) {
        setReason("");
        setRaisedVersion(result.body.policyVersion);
        router.refresh();
        return;
      }
      setErrors(
        Object.fromEntries(result.error.fieldErrors.map((error) => [error.path, error.message])),
      );
      setFormError(result.error.message);
    } catch {
      setFormError("The raise could not be sent. Try again.");
    } finally {
      setIsPending(false);
    }
  };

  return (
    <form
      className={styles.form}
      noValidate
      aria-label="Raise one value"
      onSubmit={(event) => {
        event.preventDefault();
        void raise();
      }}
    >
      {formError !== null ? (
        <div className={styles.formError} role="alert" data-testid="raise-error">
          <p>{formError}</p>
        </div>
      ) : null}
      {raisedVersion !== null ? (
        <p role="status" data-testid="raise-saved">
          Raised as policy version {raisedVersion}.
        </p>
      ) : null}
      <div className={styles.fieldRow}>
        {pattern.map((level, index) => (
          <Field
            key={formatLevels(pattern.slice(0, index + 1))}
            id={`raise-value-${index}`}
            label={`Value of ${level.key}`}
            help={
              level.value === null
                ? "any value of this key"
                : level.value.endsWith("*")
                  ? `a value starting with ${level.value.slice(0, -1)}`
                  : undefined
            }
            error={errors[`descriptor[${index}].value`] ?? errors[`descriptor[${index}].key`]}
          >
            <input
              id={`raise-value-${index}`}
              value={values[index] ?? ""}
              readOnly={level.value !== null && !level.value.endsWith("*")}
              onChange={(event) =>
                setValues(values.map((value, at) => (at === index ? event.target.value : value)))
              }
            />
          </Field>
        ))}
      </div>
      <div className={styles.fieldRow}>
        <Field
          id="raise-factor"
          label="Factor (2 doubles the limit)"
          error={errors.factor ?? errors.limit}
        >
          <input
            id="raise-factor"
            inputMode="decimal"
            value={factor}
            onChange={(event) => setFactor(event.target.value)}
          />
        </Field>
        <Field id="raise-duration" label="For" error={errors.durationMs ?? errors.expiresAt}>
          <select
            id="raise-duration"
            value={durationMs}
            onChange={(event) => setDurationMs(Number(event.target.value))}
          >
            {DURATIONS.map((duration) => (
              <option key={duration.ms} value={duration.ms}>
                {duration.label}
              </option>
            ))}
          </select>
        </Field>
      </div>
      <Field id="raise-reason" label="Reason for the raise (required)" error={errors.reason}>
        <input
          id="raise-reason"
          value={reason}
          onChange={(event) => setReason(event.target.value)}
        />
      </Field>
      <button type="submit" className="button" disabled={isPending}>
        {isPending ? "Raising…" : "Raise this value"}
      </button>
    </form>
  );
}

/** Ends one raise now, with a reason the audit log keeps. */
export function RevertRaiseButton({
  ruleId,
  raiseId,
  expectedVersion,
}: {
  ruleId: string;
  raiseId: string;
  expectedVersion: number;
}) {
  const router = useRouter();
  const [error, setError] = useState<string | null>(null);
  const [isPending, setIsPending] = useState(false);
  return (
    <>
      <button
        type="button"
        className="button"
        disabled={isPending}
        onClick={async () => {
          setIsPending(true);
          setError(null);
          try {
            const result = await callApi(
              `/api/v1/descriptor-rules/${encodeURIComponent(ruleId)}/raises/${encodeURIComponent(raiseId)}`,
              {
                method: "DELETE",
                body: { expectedVersion, reason: "raise ended from the console" },
              },
            );
            if (result.ok) router.refresh();
            else setError(result.error.message);
          } catch {
            setError("The revert could not be sent. Try again.");
          } finally {
            setIsPending(false);
          }
        }}
      >
        Revert
      </button>
      {error !== null ? (
        <span role="alert" className="small">
          {error}
        </span>
      ) : null}
    </>
  );
}
