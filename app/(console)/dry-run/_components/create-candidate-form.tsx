"use client";

import type { TPolicyLimit } from "@limitplane/enforcer/policy";
import { isRecordId } from "@limitplane/enforcer/policy";
import { useRouter } from "next/navigation";
import { useState } from "react";
import { BacktestPanel } from "@/components/backtest/backtest-panel";
import { callApi } from "@/lib/api/api-client";
import {
  draftOf,
  emptyDraft,
  type FieldErrorMap,
  validateSpecDraft,
} from "../../policies/_components/limit-draft";
import { Field, LimitFields } from "../../policies/_components/limit-fields";
import formStyles from "../../policies/_components/policy-form.module.css";
import { describePolicyLimit, describeScope } from "../../policies/_components/policy-words";

export interface CandidateTarget {
  /** The scope, e.g. `tier:free/endpoint:search`. */
  readonly scope: string;
  /** The group it is listed under. */
  readonly group: string;
  /** The rule in force there now, or null for a new limit. */
  readonly current: TPolicyLimit | null;
}

const MAX_REASON_LENGTH = 1000;

/**
 * Creates a dry-run candidate: a limit counted next to the rule it would replace, on real traffic,
 * rejecting nothing. Posted to the API with a reason; on success, opens the candidate's page.
 */
export function CreateCandidateForm({
  targets,
  initialTarget,
}: {
  targets: readonly CandidateTarget[];
  /** Preselected rule (from `?target=`), when it is one of `targets`. */
  initialTarget?: string | null;
}) {
  const router = useRouter();
  const [scope, setScope] = useState(
    targets.find((item) => item.scope === initialTarget)?.scope ?? targets[0]?.scope ?? "",
  );
  const target = targets.find((item) => item.scope === scope) ?? null;
  const [draft, setDraft] = useState(() =>
    target?.current ? draftOf(target.current) : emptyDraft("open"),
  );
  const [id, setId] = useState("");
  const [reason, setReason] = useState("");
  const [errors, setErrors] = useState<FieldErrorMap>({});
  const [formError, setFormError] = useState<string | null>(null);
  const [isPending, setIsPending] = useState(false);

  const chooseTarget = (next: string) => {
    setScope(next);
    const chosen = targets.find((item) => item.scope === next);
    // Start from the rule in force, so "stricter" is an edit of numbers the operator can see.
    setDraft(chosen?.current ? draftOf(chosen.current) : emptyDraft("open"));
  };

  const submit = async () => {
    setFormError(null);
    const { limit, errors: limitErrors } = validateSpecDraft(draft, ["limit"]);
    const next: Record<string, string> = { ...limitErrors };
    if (reason.trim() === "")
      next.reason = "Say why you are trying this limit: it is kept in the audit log.";
    else if (reason.trim().length > MAX_REASON_LENGTH)
      next.reason = `At most ${MAX_REASON_LENGTH} characters.`;
    if (id.trim() !== "" && !isRecordId(id.trim()))
      next.id =
        'Use 1 to 64 characters of A-Z, a-z, 0-9, "_" and "-", starting with a letter or digit.';
    if (target === null) next.target = "Choose the rule the candidate would replace.";
    setErrors(next);
    if (limit === null || Object.keys(next).length > 0) {
      setFormError("Fix the fields marked below.");
      return;
    }
    setIsPending(true);
    try {
      const answer = await callApi<{ candidate: { id: string } }>("/api/v1/candidates", {
        method: "POST",
        body: {
          ...(id.trim() === "" ? {} : { id: id.trim() }),
          target: scope,
          limit,
          reason: reason.trim(),
        },
      });
      if (answer.ok) {
        router.push(`/dry-run/${encodeURIComponent(answer.body.candidate.id)}`);
        return;
      }
      const { error } = answer;
      setErrors(Object.fromEntries(error.fieldErrors.map((item) => [item.path, item.message])));
      setFormError(error.message);
    } catch {
      setFormError("The candidate could not be sent. Check the list before trying again.");
    } finally {
      setIsPending(false);
    }
  };

  const groups = [...new Set(targets.map((item) => item.group))];
  // The backtest replays the candidate as if promoted, before it starts counting.
  const backtestLimit = target === null ? null : validateSpecDraft(draft, ["limit"]).limit;
  return (
    <form
      className={formStyles.form}
      noValidate
      aria-label="Create a dry-run candidate"
      onSubmit={(event) => {
        event.preventDefault();
        void submit();
      }}
    >
      {formError !== null ? (
        <p className={formStyles.formError} role="alert" data-testid="form-error">
          {formError}
        </p>
      ) : null}
      <Field
        id="candidate-target"
        label="Rule it would replace"
        error={errors.target}
        help={target === null ? undefined : describeScope(target.scope)}
      >
        <select
          id="candidate-target"
          value={scope}
          onChange={(event) => chooseTarget(event.target.value)}
        >
          {groups.map((group) => (
            <optgroup key={group} label={group}>
              {targets
                .filter((item) => item.group === group)
                .map((item) => (
                  <option key={item.scope} value={item.scope}>
                    {item.scope}
                    {item.current === null ? " (new limit)" : ""}
                  </option>
                ))}
            </optgroup>
          ))}
        </select>
      </Field>
      <p className="small" data-testid="target-current">
        In force now:{" "}
        <strong>
          {target?.current
            ? describePolicyLimit(target.current)
            : "no limit of its own: the candidate would be a new limit"}
        </strong>
      </p>
      <LimitFields
        legend="The candidate's limit, counted in dry-run"
        path={["limit"]}
        draft={draft}
        errors={errors}
        onChange={setDraft}
        idPrefix="candidate-limit"
        showBehaviour={false}
      />
      <BacktestPanel
        draft={
          backtestLimit === null ? null : { kind: "candidate", target: scope, limit: backtestLimit }
        }
        unavailable="Fix the limit fields to run a backtest."
        title="Backtest: the last 24 h of recorded traffic, had this limit been enforced"
        headingLevel={3}
      />
      <Field
        id="candidate-id"
        label="Name (optional)"
        error={errors.id}
        help="Left empty, one is generated."
      >
        <input
          id="candidate-id"
          value={id}
          onChange={(event) => setId(event.target.value)}
          autoComplete="off"
        />
      </Field>
      <Field
        id="candidate-reason"
        label="Reason (required)"
        error={errors.reason}
        help="Why this limit is worth trying; kept in the audit log."
      >
        <textarea
          id="candidate-reason"
          rows={2}
          value={reason}
          onChange={(event) => setReason(event.target.value)}
          aria-invalid={errors.reason ? true : undefined}
        />
      </Field>
      <div className={formStyles.actions}>
        <button type="submit" className="button" disabled={isPending} aria-busy={isPending}>
          {isPending ? "Creating…" : "Start dry-run"}
        </button>
        <span className="muted small">
          It counts what it would block; it never rejects a request.
        </span>
      </div>
    </form>
  );
}
