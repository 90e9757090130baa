"use client";

import { useRouter } from "next/navigation";
import { useState } from "react";
import { callApi } from "@/lib/api/api-client";
import { reasonProblem } from "@/lib/control/change-context";
import { Field } from "../../policies/_components/limit-fields";
import styles from "../../policies/_components/policy-form.module.css";

/**
 * Deleting a budget, in two steps: the first button only asks for confirmation and a reason;
 * callers that read budgets from the policy then refuse its scope.
 */
export function DeleteOutboundBudget({ name, version }: { name: string; version: number }) {
  const router = useRouter();
  const [isConfirming, setIsConfirming] = useState(false);
  const [reason, setReason] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [isPending, setIsPending] = useState(false);

  const remove = async () => {
    const problem = reasonProblem(reason, "Say why: the reason is kept in the audit log.");
    if (problem !== null) {
      setError(problem);
      return;
    }
    setError(null);
    setIsPending(true);
    try {
      const result = await callApi(`/api/v1/outbound-budgets/${encodeURIComponent(name)}`, {
        method: "DELETE",
        body: { expectedVersion: version, reason: reason.trim() },
      });
      if (result.ok) {
        router.push("/outbound-budgets");
        router.refresh();
        return;
      }
      setError(result.error.message);
    } catch {
      setError("The deletion could not be sent. Try again.");
    } finally {
      setIsPending(false);
    }
  };

  if (!isConfirming) {
    return (
      <button type="button" className="button" onClick={() => setIsConfirming(true)}>
        Delete budget…
      </button>
    );
  }
  return (
    <form
      className={styles.form}
      noValidate
      aria-label="Delete outbound budget"
      onSubmit={(event) => {
        event.preventDefault();
        void remove();
      }}
    >
      <p role="alert">
        Delete <code>outbound:{name}</code>? Callers that read it from the policy refuse its scope
        from the next policy version on.
      </p>
      <Field id="delete-reason" label="Reason for deleting (required)" error={error ?? undefined}>
        <input
          id="delete-reason"
          value={reason}
          onChange={(event) => setReason(event.target.value)}
        />
      </Field>
      <div className={styles.actions}>
        <button type="submit" className="button" disabled={isPending}>
          Delete {name}
        </button>
        <button type="button" className="button" onClick={() => setIsConfirming(false)}>
          Keep it
        </button>
      </div>
    </form>
  );
}
