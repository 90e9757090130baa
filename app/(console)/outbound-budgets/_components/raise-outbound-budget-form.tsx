"use client";

import type { GuardrailSettings, TLimitSpec } from "@limitplane/enforcer/policy";
import { useRouter } from "next/navigation";
import { useEffect, useState } from "react";
import { callApi } from "@/lib/api/api-client";
import { describeRaiseChanges } from "@/lib/console/outbound-raise";
import { formatUtcClock } from "@/lib/control/format-words";
import { checkRaiseOutboundBudget } from "@/lib/control/outbound-budget/raise-outbound-budget-options";
import {
  draftOfSpec,
  type LimitDraft,
  validateSpecDraft,
} from "../../policies/_components/limit-draft";
import { CheckboxField, Field, LimitFields } from "../../policies/_components/limit-fields";
import styles from "../../policies/_components/policy-form.module.css";

const MINUTE_MS = 60_000;

type DurationUnit = "minutes" | "hours";

/** A whole number as typed, or the text itself for the schema to refuse by name. */
function numberOf(text: string): number | string {
  return text.trim() !== "" && Number.isFinite(Number(text)) ? Number(text) : text;
}

function errorMapOf(errors: readonly { path: string; message: string }[]): Record<string, string> {
  const map: Record<string, string> = {};
  for (const error of errors) map[error.path] ??= error.message;
  return map;
}

export interface RaiseOutboundBudgetFormProps {
  readonly name: string;
  /** The budget's own numbers, which the raise replaces for a while. */
  readonly limit: TLimitSpec | null;
  readonly concurrency: { readonly max: number; readonly slotTtlMs: number } | null;
  /** The policy's guardrails, checked before anything is sent (the API checks them again). */
  readonly guardrails: GuardrailSettings;
}

/**
 * "Raise for a while": the numbers in force while raised (prefilled with the budget's own), how
 * long, and why. A preview says base → raised and until when; the guardrails and every field are
 * checked with the service's own check before sending, and the API's field errors land at the
 * field they name.
 */
export function RaiseOutboundBudgetForm({
  name,
  limit,
  concurrency,
  guardrails,
}: RaiseOutboundBudgetFormProps) {
  const router = useRouter();
  const [isRaisingLimit, setIsRaisingLimit] = useState(limit !== null);
  const [draft, setDraft] = useState<LimitDraft | null>(limit === null ? null : draftOfSpec(limit));
  const [concurrencyMax, setConcurrencyMax] = useState(
    concurrency === null ? "" : String(concurrency.max),
  );
  const [duration, setDuration] = useState("8");
  const [unit, setUnit] = useState<DurationUnit>("hours");
  const [reason, setReason] = useState("");
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [formError, setFormError] = useState<string | null>(null);
  const [isPending, setIsPending] = useState(false);
  // The preview's "until" is counted from now; the clock is read after mounting so the server's
  // render and the browser's first render agree.
  const [nowMs, setNowMs] = useState<number | null>(null);
  useEffect(() => {
    setNowMs(Date.now());
    const timer = setInterval(() => setNowMs(Date.now()), 30_000);
    return () => clearInterval(timer);
  }, []);

  const durationMinutes = (() => {
    const value = numberOf(duration);
    return typeof value === "number" && unit === "hours" ? value * 60 : value;
  })();

  const build = () => {
    const checked = isRaisingLimit && draft !== null ? validateSpecDraft(draft, ["limit"]) : null;
    const options = {
      name,
      limit: checked?.limit ?? null,
      concurrencyMax:
        concurrency === null || concurrencyMax.trim() === "" ? null : numberOf(concurrencyMax),
      durationMinutes,
    };
    const found: Record<string, string> = { ...(checked?.errors ?? {}) };
    if (checked === null || checked.limit !== null) {
      const problems = checkRaiseOutboundBudget(options, reason, {
        guardrails,
        budget: { limit, concurrency },
        nowMs: Date.now(),
      });
      for (const problem of problems) found[problem.path] ??= problem.message;
    }
    return { options, errors: found };
  };

  const preview = (() => {
    const { options, errors: found } = build();
    if (Object.keys(found).some((path) => path !== "reason")) return null;
    const raised = {
      limit: options.limit,
      concurrencyMax: typeof options.concurrencyMax === "number" ? options.concurrencyMax : null,
    };
    const lines = describeRaiseChanges({ limit, concurrency }, raised);
    const until =
      nowMs === null || typeof durationMinutes !== "number"
        ? null
        : formatUtcClock(nowMs + durationMinutes * MINUTE_MS, nowMs);
    return { lines, until };
  })();

  const submit = async () => {
    setFormError(null);
    const { options, errors: found } = build();
    if (Object.keys(found).length > 0) {
      setErrors(found);
      setFormError("Correct the fields marked below.");
      return;
    }
    setErrors({});
    setIsPending(true);
    try {
      const { name: _name, ...body } = options;
      const result = await callApi(`/api/v1/outbound-budgets/${encodeURIComponent(name)}/raise`, {
        method: "POST",
        body: { ...body, reason: reason.trim() },
      });
      if (result.ok) {
        setReason("");
        router.refresh();
        return;
      }
      setErrors(errorMapOf(result.error.fieldErrors));
      setFormError(result.error.message);
    } catch {
      setFormError("The raise could not be sent. Try again.");
    } finally {
      setIsPending(false);
    }
  };

  const durationError = errors.durationMinutes ?? errors.until;
  return (
    <form
      className={styles.form}
      noValidate
      aria-label="Raise for a while"
      onSubmit={(event) => {
        event.preventDefault();
        void submit();
      }}
    >
      {formError !== null ? (
        <div className={styles.formError} role="alert" data-testid="raise-error">
          <p>{formError}</p>
        </div>
      ) : null}
      {limit !== null && draft !== null ? (
        <>
          <CheckboxField
            id="raise-has-limit"
            label="Change the limit while raised"
            help="Off: the budget's own limit stays; only the calls in flight change"
            isChecked={isRaisingLimit}
            onChange={setIsRaisingLimit}
          />
          {isRaisingLimit ? (
            <LimitFields
              legend="Limit while raised"
              path={["limit"]}
              draft={draft}
              errors={errors}
              onChange={setDraft}
              idPrefix="raise-limit"
              showBehaviour={false}
            />
          ) : null}
        </>
      ) : null}
      {concurrency !== null ? (
        <Field
          id="raise-concurrency-max"
          label="Calls in flight at most while raised (empty: keep the budget's own)"
          error={errors.concurrencyMax}
        >
          <input
            id="raise-concurrency-max"
            inputMode="numeric"
            value={concurrencyMax}
            aria-invalid={errors.concurrencyMax === undefined ? undefined : true}
            aria-describedby={
              errors.concurrencyMax === undefined ? undefined : "raise-concurrency-max-error"
            }
            onChange={(event) => setConcurrencyMax(event.target.value)}
          />
        </Field>
      ) : null}
      {errors.limit !== undefined && !isRaisingLimit ? (
        <p className={styles.fieldError} role="alert">
          {errors.limit}
        </p>
      ) : null}
      <div className={styles.fieldRow}>
        <Field
          id="raise-duration"
          label="For how long"
          error={durationError}
          help={`At most ${Math.floor(guardrails.maxIncidentDurationMs / 3_600_000)} h (the guardrail)`}
        >
          <input
            id="raise-duration"
            inputMode="numeric"
            value={duration}
            aria-invalid={durationError === undefined ? undefined : true}
            aria-describedby={durationError === undefined ? undefined : "raise-duration-error"}
            onChange={(event) => setDuration(event.target.value)}
          />
        </Field>
        <Field id="raise-duration-unit" label="Unit">
          <select
            id="raise-duration-unit"
            value={unit}
            onChange={(event) => setUnit(event.target.value === "minutes" ? "minutes" : "hours")}
          >
            <option value="hours">hours</option>
            <option value="minutes">minutes</option>
          </select>
        </Field>
      </div>
      <Field id="raise-reason" label="Reason (required)" error={errors.reason}>
        <input
          id="raise-reason"
          value={reason}
          aria-invalid={errors.reason === undefined ? undefined : true}
          aria-describedby={errors.reason === undefined ? undefined : "raise-reason-error"}
          onChange={(event) => setReason(event.target.value)}
        />
      </Field>
      <div role="status" aria-live="polite" data-testid="raise-preview">
        {preview === null ? (
          <p className="muted">The preview appears once the numbers are within the guardrails.</p>
        ) : (
          <>
            {preview.lines.map((line) => (
              <p key={line}>{line}</p>
            ))}
            <p>
              {preview.until === null ? "" : `Until ${preview.until}, then the budget's own again.`}
            </p>
          </>
        )}
      </div>
      <div className={styles.actions}>
        <button type="submit" className="button" disabled={isPending}>
          {isPending ? "Raising…" : "Raise for a while"}
        </button>
      </div>
    </form>
  );
}
