"use client";

import type { TLimitSpec } from "@limitplane/enforcer/policy";
import { hasForbiddenCharacter } from "@limitplane/enforcer/policy";
import { useRouter } from "next/navigation";
import { useState } from "react";
import { callApi } from "@/lib/api/api-client";
import {
  draftOfSpec,
  type FieldErrorMap,
  validateSpecDraft,
} from "../../policies/_components/limit-draft";
import { Field, LimitFields } from "../../policies/_components/limit-fields";
import formStyles from "../../policies/_components/policy-form.module.css";

/**
 * Changes a running candidate's limit. It keeps counting under the same scope, but the page's
 * comparison starts again after the change (`lib/control/dry-run/compare-candidate.ts`): counts
 * from before it are the old limit's.
 */
export function UpdateCandidateForm({
  id,
  version,
  limit,
}: {
  id: string;
  version: number;
  limit: TLimitSpec;
}) {
  const router = useRouter();
  const [draft, setDraft] = useState(() => draftOfSpec(limit));
  const [reason, setReason] = useState("");
  const [errors, setErrors] = useState<FieldErrorMap>({});
  const [message, setMessage] = useState<{ tone: "error" | "ok"; text: string } | null>(null);
  const [isPending, setIsPending] = useState(false);

  const submit = async () => {
    setMessage(null);
    const { limit: parsed, errors: limitErrors } = validateSpecDraft(draft, ["limit"]);
    const next: Record<string, string> = { ...limitErrors };
    const trimmed = reason.trim();
    if (trimmed === "") next.reason = "Say why you are changing it: it is kept in the audit log.";
    else if (trimmed.length > 1000 || hasForbiddenCharacter(trimmed))
      next.reason = "One line of at most 1000 characters, without control characters.";
    setErrors(next);
    if (parsed === null || Object.keys(next).length > 0) return;
    setIsPending(true);
    try {
      const answer = await callApi(`/api/v1/candidates/${encodeURIComponent(id)}`, {
        method: "PATCH",
        body: { expectedVersion: version, limit: parsed, reason: trimmed },
      });
      if (answer.ok) {
        setReason("");
        setMessage({
          tone: "ok",
          text: "Changed. The comparison starts again with the first whole minute after this change: earlier counts are the old limit's.",
        });
        router.refresh();
        return;
      }
      const { error } = answer;
      setErrors(Object.fromEntries(error.fieldErrors.map((item) => [item.path, item.message])));
      setMessage({
        tone: "error",
        text:
          error.code === "VERSION_CONFLICT"
            ? `Someone changed this candidate since you opened it. Reload to see it. ${error.message}`
            : error.message,
      });
    } catch {
      setMessage({
        tone: "error",
        text: "The change could not be sent. Reload before trying again.",
      });
    } finally {
      setIsPending(false);
    }
  };

  return (
    <form
      className={formStyles.form}
      noValidate
      aria-label="Change the candidate's limit"
      onSubmit={(event) => {
        event.preventDefault();
        void submit();
      }}
    >
      {message !== null ? (
        <p
          className={message.tone === "ok" ? formStyles.saved : formStyles.formError}
          role={message.tone === "ok" ? "status" : "alert"}
        >
          {message.text}
        </p>
      ) : null}
      <LimitFields
        legend="New limit, counted in dry-run"
        path={["limit"]}
        draft={draft}
        errors={errors}
        onChange={setDraft}
        idPrefix="update-limit"
        showBehaviour={false}
      />
      <Field id="update-reason" label="Reason for the change (required)" error={errors.reason}>
        <textarea
          id="update-reason"
          rows={2}
          value={reason}
          onChange={(event) => setReason(event.target.value)}
        />
      </Field>
      <div className={formStyles.actions}>
        <button
          type="submit"
          className="button button-secondary"
          disabled={isPending}
          aria-busy={isPending}
        >
          {isPending ? "Saving…" : "Change the candidate"}
        </button>
      </div>
    </form>
  );
}
