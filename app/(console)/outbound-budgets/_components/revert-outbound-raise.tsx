"use client";

import { useRouter } from "next/navigation";
import { useState } from "react";
import { callApi } from "@/lib/api/api-client";
import { reasonProblem } from "@/lib/control/change-context";
import { Field } from "../../policies/_components/limit-fields";
import styles from "../../policies/_components/policy-form.module.css";

/**
 * "Revert now" on a raised budget: asks for a reason, then ends the raise with the version the
 * page was opened at. Its own limit and cap apply again from the version this publishes.
 */
export function RevertOutboundRaise({ name, version }: { name: string; version: number }) {
  const router = useRouter();
  const [isConfirming, setIsConfirming] = useState(false);
  const [reason, setReason] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [isPending, setIsPending] = useState(false);

  const revert = async () => {
    const problem = reasonProblem(reason, "Say why: the reason is kept in the audit log.");
    if (problem !== null) {
      setError(problem);
      return;
    }
    setError(null);
    setIsPending(true);
    try {
      const result = await callApi(`/api/v1/outbound-budgets/${encodeURIComponent(name)}/raise`, {
        method: "DELETE",
        body: { expectedVersion: version, reason: reason.trim() },
      });
      if (result.ok) {
        setIsConfirming(false);
        setReason("");
        router.refresh();
        return;
      }
      setError(result.error.message);
    } catch {
      setError("The revert could not be sent. Try again.");
    } finally {
      setIsPending(false);
    }
  };

  if (!isConfirming) {
    return (
      <button type="button" className="button" onClick={() => setIsConfirming(true)}>
        Revert now
      </button>
    );
  }
  return (
    <form
      className={styles.form}
      noValidate
      aria-label="Revert the raise"
      onSubmit={(event) => {
        event.preventDefault();
        void revert();
      }}
    >
      <Field id="revert-reason" label="Reason for reverting (required)" error={error ?? undefined}>
        <input
          id="revert-reason"
          value={reason}
          aria-invalid={error === null ? undefined : true}
          aria-describedby={error === null ? undefined : "revert-reason-error"}
          onChange={(event) => setReason(event.target.value)}
        />
      </Field>
      <div className={styles.actions}>
        <button type="submit" className="button" disabled={isPending}>
          {isPending ? "Reverting…" : "Revert the raise"}
        </button>
        <button type="button" className="button" onClick={() => setIsConfirming(false)}>
          Keep it
        </button>
      </div>
    </form>
  );
}
