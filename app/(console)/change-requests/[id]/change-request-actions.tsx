"use client";

import { useRouter } from "next/navigation";
import { useId, useState } from "react";
import styles from "@/components/ops/ops.module.css";
import { ReasonField, reasonProblem } from "@/components/ops/reason-field";
import { callApi } from "@/lib/api/api-client";

type Action = "approve" | "reject" | "withdraw" | "preview";

const DONE: Record<Action, string> = {
  approve: "Approving…",
  reject: "Rejecting…",
  withdraw: "Withdrawing…",
  preview: "Re-previewing…",
};

/**
 * Approve, reject, withdraw or re-preview a pending change request through the API, with the
 * request's version the page was rendered at: a decision someone else made meanwhile comes back
 * as a 409, said in words, and the page reloads to show it.
 */
export function ChangeRequestActions({
  id,
  version,
  isStale,
  canDecide,
  canWithdraw,
  canRefresh,
  isStaged = false,
}: {
  id: string;
  /** Approving starts a staged change (its first slice) rather than applying at once. */
  isStaged?: boolean;
  version: number;
  isStale: boolean;
  canDecide: boolean;
  canWithdraw: boolean;
  canRefresh: boolean;
}) {
  const router = useRouter();
  const prefix = useId();
  const [reason, setReason] = useState("");
  const [isTried, setIsTried] = useState(false);
  const [pending, setPending] = useState<Action | null>(null);
  const [message, setMessage] = useState<string | null>(null);

  const act = async (action: Action) => {
    setIsTried(true);
    if (reasonProblem(reason) !== null) {
      document.getElementById(`${prefix}-reason`)?.focus();
      return;
    }
    setPending(action);
    setMessage(null);
    try {
      const answer = await callApi(`/api/v1/change-requests/${encodeURIComponent(id)}/${action}`, {
        method: "POST",
        body: { expectedVersion: version, reason: reason.trim() },
      });
      if (answer.ok) {
        setReason("");
        setIsTried(false);
        router.refresh();
        return;
      }
      const { error } = answer;
      setMessage(
        [
          error.message,
          ...error.fieldErrors.map((field) => `${field.path}: ${field.message}`),
        ].join(" "),
      );
    } catch {
      setMessage("The console did not answer. Reload to see the request's state.");
    } finally {
      setPending(null);
    }
  };

  if (!canDecide && !canWithdraw && !canRefresh) {
    return (
      <p className="panel muted">
        Another admin, signed in, decides this request; you may read it.
      </p>
    );
  }

  return (
    <section className="panel" aria-labelledby={`${prefix}-heading`}>
      <h2 id={`${prefix}-heading`}>Decide</h2>
      {message !== null ? (
        <p className={styles.fieldError} role="alert" data-testid="change-request-error">
          {message}
        </p>
      ) : null}
      <ReasonField
        id={`${prefix}-reason`}
        label="Reason"
        value={reason}
        onChange={setReason}
        showProblem={isTried}
        hint="Why you approve, reject, withdraw or re-preview it: kept in the audit log."
      />
      <div className={styles.actions}>
        {canDecide ? (
          <>
            <button
              type="button"
              className="button"
              onClick={() => void act("approve")}
              disabled={pending !== null || isStale}
              aria-busy={pending === "approve"}
            >
              {pending === "approve"
                ? DONE.approve
                : isStaged
                  ? "Approve and start the staged change"
                  : "Approve and apply"}
            </button>
            <button
              type="button"
              className="button button-danger"
              onClick={() => void act("reject")}
              disabled={pending !== null}
              aria-busy={pending === "reject"}
            >
              {pending === "reject" ? DONE.reject : "Reject"}
            </button>
          </>
        ) : (
          <p className="small muted">
            {canWithdraw
              ? "You requested this change: another admin must approve or reject it."
              : "Only a signed-in admin other than the author may approve or reject."}
          </p>
        )}
        {canRefresh ? (
          <button
            type="button"
            className="button button-secondary"
            onClick={() => void act("preview")}
            disabled={pending !== null}
            aria-busy={pending === "preview"}
          >
            {pending === "preview" ? DONE.preview : "Re-preview"}
          </button>
        ) : null}
        {canWithdraw ? (
          <button
            type="button"
            className="button button-secondary"
            onClick={() => void act("withdraw")}
            disabled={pending !== null}
            aria-busy={pending === "withdraw"}
          >
            {pending === "withdraw" ? DONE.withdraw : "Withdraw"}
          </button>
        ) : null}
      </div>
      {isStale && canDecide ? (
        <p className="small">Approval waits for a re-preview: the policy changed since.</p>
      ) : null}
    </section>
  );
}
