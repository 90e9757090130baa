"use client";

import {
  type FieldPath,
  fieldErrorsFromZod,
  formatFieldPath,
  type TOutboundBudget,
  ZOutboundBudget,
} from "@limitplane/enforcer/policy";
import { useRouter } from "next/navigation";
import { useState } from "react";
import { callApi } from "@/lib/api/api-client";
import { reasonProblem } from "@/lib/console/reason";
import {
  draftOfSpec,
  type FieldErrorMap,
  type LimitDraft,
  validateSpecDraft,
} from "../../policies/_components/limit-draft";
import { Field, LimitFields } from "../../policies/_components/limit-fields";
import styles from "../../policies/_components/policy-form.module.css";

const NEW_LIMIT = { algorithm: "token-bucket", capacity: 1, refillPerSec: 10 } as const;

function errorMapOf(errors: readonly { path: string; message: string }[]): FieldErrorMap {
  const map: Record<string, string> = {};
  for (const error of errors) map[error.path] ??= error.message;
  return map;
}

/** A whole number as typed, or the text itself for the schema to refuse by name. */
function numberOf(text: string): number | string {
  return text.trim() !== "" && Number.isFinite(Number(text)) ? Number(text) : text;
}

/**
 * Creates an outbound budget, or replaces one (`budget` given: saved with the version the page
 * was opened at). Checked with the policy's own schema before it is sent; the API's field errors
 * land at the field they name.
 */
export function OutboundBudgetForm({
  budget,
}: {
  budget?: TOutboundBudget & { readonly version: number };
}) {
  const router = useRouter();
  const isNew = budget === undefined;
  const [name, setName] = useState(budget?.name ?? "");
  const [displayName, setDisplayName] = useState(budget?.displayName ?? "");
  const [hasLimit, setHasLimit] = useState(budget === undefined || budget.limit !== null);
  const [draft, setDraft] = useState<LimitDraft>(draftOfSpec(budget?.limit ?? NEW_LIMIT));
  const [concurrencyMax, setConcurrencyMax] = useState(
    budget?.concurrency ? String(budget.concurrency.max) : "",
  );
  const [slotTtlMs, setSlotTtlMs] = useState(String(budget?.concurrency?.slotTtlMs ?? 10_000));
  const [maxWaitMs, setMaxWaitMs] = useState(String(budget?.maxWaitMs ?? 30_000));
  const [keyBy, setKeyBy] = useState<TOutboundBudget["keyBy"]>(budget?.keyBy ?? "single");
  const [reason, setReason] = useState("");
  const [errors, setErrors] = useState<FieldErrorMap>({});
  const [formError, setFormError] = useState<string | null>(null);
  const [savedVersion, setSavedVersion] = useState<number | null>(null);
  const [isPending, setIsPending] = useState(false);

  const build = ():
    | { ok: true; body: Record<string, unknown> }
    | { ok: false; errors: FieldErrorMap } => {
    const checked = hasLimit ? validateSpecDraft(draft, ["limit"]) : null;
    const body = {
      name: name.trim(),
      displayName: displayName.trim() === "" ? null : displayName.trim(),
      limit: checked?.limit ?? null,
      concurrency:
        concurrencyMax.trim() === ""
          ? null
          : { max: numberOf(concurrencyMax), slotTtlMs: numberOf(slotTtlMs) },
      maxWaitMs: numberOf(maxWaitMs),
      keyBy,
    };
    const found: Record<string, string> = { ...(checked?.errors ?? {}) };
    if (checked === null || checked.limit !== null) {
      const parsed = ZOutboundBudget.safeParse(body);
      if (!parsed.success) {
        for (const error of fieldErrorsFromZod(parsed.error)) {
          found[formatFieldPath(error.path as FieldPath)] ??= error.message;
        }
      }
    }
    const reasonError = reasonProblem(reason, "Say why: the reason is kept in the audit log.");
    if (reasonError !== null) found.reason = reasonError;
    return Object.keys(found).length > 0 ? { ok: false, errors: found } : { ok: true, body };
  };

  const save = async () => {
    setFormError(null);
    setSavedVersion(null);
    const built = build();
    if (!built.ok) {
      setErrors(built.errors);
      setFormError("Correct the fields marked below.");
      return;
    }
    setErrors({});
    setIsPending(true);
    try {
      const { name: budgetName, ...fields } = built.body;
      const result = isNew
        ? await callApi<{ budget: { name: string }; policyVersion: number | null }>(
            "/api/v1/outbound-budgets",
            { method: "POST", body: { ...built.body, reason: reason.trim() } },
          )
        : await callApi<{ budget: { name: string }; policyVersion: number | null }>(
            `/api/v1/outbound-budgets/${encodeURIComponent(String(budgetName))}`,
            {
              method: "PUT",
              body: { ...fields, expectedVersion: budget.version, reason: reason.trim() },
            },
          );
      if (result.ok) {
        setSavedVersion(result.body.policyVersion);
        setReason("");
        if (isNew) router.push(`/outbound-budgets/${encodeURIComponent(result.body.budget.name)}`);
        else router.refresh();
        return;
      }
      setErrors(errorMapOf(result.error.fieldErrors));
      setFormError(result.error.message);
    } catch {
      setFormError("The change could not be sent. Try again.");
    } finally {
      setIsPending(false);
    }
  };

  return (
    <form
      className={styles.form}
      noValidate
      aria-label={isNew ? "New outbound budget" : "Edit outbound budget"}
      onSubmit={(event) => {
        event.preventDefault();
        void save();
      }}
    >
      {formError !== null ? (
        <div className={styles.formError} role="alert" data-testid="budget-error">
          <p>{formError}</p>
        </div>
      ) : null}
      {savedVersion !== null ? (
        <p role="status" data-testid="budget-saved">
          Saved as policy version {savedVersion}.
        </p>
      ) : null}
      {isNew ? (
        <Field
          id="budget-name"
          label="Name (the scope is outbound:<name>)"
          error={errors.name}
          help="a-z, 0-9, _ and -, as callers name it"
        >
          <input id="budget-name" value={name} onChange={(event) => setName(event.target.value)} />
        </Field>
      ) : null}
      <Field id="budget-display-name" label="Display name" error={errors.displayName}>
        <input
          id="budget-display-name"
          value={displayName}
          onChange={(event) => setDisplayName(event.target.value)}
        />
      </Field>
      <Field id="budget-has-limit" label="Rate" error={hasLimit ? undefined : errors.limit}>
        <select
          id="budget-has-limit"
          value={hasLimit ? "limit" : "none"}
          onChange={(event) => setHasLimit(event.target.value === "limit")}
        >
          <option value="limit">A limit callers wait for</option>
          <option value="none">None (a concurrency cap only)</option>
        </select>
      </Field>
      {hasLimit ? (
        <LimitFields
          legend="Limit"
          path={["limit"]}
          draft={draft}
          errors={errors}
          onChange={setDraft}
          idPrefix="budget-limit"
          showBehaviour={false}
        />
      ) : null}
      <Field
        id="budget-concurrency-max"
        label="Calls in flight at most (empty: no cap)"
        error={errors["concurrency.max"] ?? errors.concurrency}
      >
        <input
          id="budget-concurrency-max"
          inputMode="numeric"
          value={concurrencyMax}
          onChange={(event) => setConcurrencyMax(event.target.value)}
        />
      </Field>
      {concurrencyMax.trim() !== "" ? (
        <Field
          id="budget-slot-ttl"
          label="Slot lifetime without renewal (ms)"
          error={errors["concurrency.slotTtlMs"]}
        >
          <input
            id="budget-slot-ttl"
            inputMode="numeric"
            value={slotTtlMs}
            onChange={(event) => setSlotTtlMs(event.target.value)}
          />
        </Field>
      ) : null}
      <Field id="budget-max-wait" label="Longest wait (ms)" error={errors.maxWaitMs}>
        <input
          id="budget-max-wait"
          inputMode="numeric"
          value={maxWaitMs}
          onChange={(event) => setMaxWaitMs(event.target.value)}
        />
      </Field>
      <Field id="budget-key-by" label="Key" error={errors.keyBy}>
        <select
          id="budget-key-by"
          value={keyBy}
          onChange={(event) => setKeyBy(event.target.value as TOutboundBudget["keyBy"])}
        >
          <option value="single">One budget for all calls</option>
          <option value="host">One per host</option>
          <option value="account">One per provider account or channel</option>
        </select>
      </Field>
      <Field id="budget-reason" label="Reason (required)" error={errors.reason}>
        <input
          id="budget-reason"
          value={reason}
          onChange={(event) => setReason(event.target.value)}
        />
      </Field>
      <div className={styles.actions}>
        <button type="submit" className="button" disabled={isPending}>
          {isNew ? "Create budget" : "Save budget"}
        </button>
      </div>
    </form>
  );
}
