"use client";

import { useRouter } from "next/navigation";
import { type FormEvent, type ReactNode, useState } from "react";
import { callApi } from "@/lib/api/api-client";
// A direct module import: this is client code, and the reason check is pure.
import { reasonProblem } from "@/lib/console/reason";
import { Field } from "../policies/_components/limit-fields";
import styles from "../policies/_components/policy-form.module.css";

export interface ConfirmWithReasonProps {
  /** The first button, which only opens the confirmation: "Revert now", "Delete budget…". */
  triggerLabel: string;
  /** The confirmation form's accessible name: "Revert the raise". */
  formLabel: string;
  /** What will happen, above the reason: a warning the person reads before confirming. */
  children?: ReactNode;
  /** The reason input's id, unique on the page; its error is shown at `${reasonId}-error`. */
  reasonId: string;
  /** "Reason for reverting (required)". */
  reasonLabel: string;
  /** The confirm button's label; says the action, never just "OK". */
  confirmLabel: string;
  /** The confirm button's label while the request runs. @default confirmLabel */
  pendingLabel?: string;
  /** Same-origin API path the reason is sent to. */
  url: string;
  method: "POST" | "DELETE";
  /** Sent beside the reason: `{ expectedVersion }`. */
  body: Readonly<Record<string, unknown>>;
  /** Where to go once done (the list after a deletion); absent: close the confirmation and stay. */
  afterDoneHref?: string;
  /** Shown when the request could not be sent at all: "The revert could not be sent. Try again." */
  unsentMessage: string;
}

/**
 * A change in two steps: the first button only opens a confirmation that asks why (the reason is
 * kept in the audit log), and confirming sends it through the API. A refusal is shown at the
 * reason in the API's words; the page refreshes once the change is made.
 */
export function ConfirmWithReason({
  triggerLabel,
  formLabel,
  children,
  reasonId,
  reasonLabel,
  confirmLabel,
  pendingLabel = confirmLabel,
  url,
  method,
  body,
  afterDoneHref,
  unsentMessage,
}: ConfirmWithReasonProps) {
  const router = useRouter();
  const [isConfirming, setIsConfirming] = useState(false);
  const [reason, setReason] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [isPending, setIsPending] = useState(false);

  const confirm = async (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const problem = reasonProblem(reason, "Say why: the reason is kept in the audit log.");
    if (problem !== null) {
      setError(problem);
      return;
    }
    setError(null);
    setIsPending(true);
    try {
      const result = await callApi(url, { method, body: { ...body, reason: reason.trim() } });
      if (result.ok) {
        if (afterDoneHref === undefined) {
          setIsConfirming(false);
          setReason("");
        } else {
          router.push(afterDoneHref);
        }
        router.refresh();
        return;
      }
      setError(result.error.message);
    } catch {
      setError(unsentMessage);
    } finally {
      setIsPending(false);
    }
  };

  if (!isConfirming) {
    return (
      <button type="button" className="button" onClick={() => setIsConfirming(true)}>
        {triggerLabel}
      </button>
    );
  }
  return (
    <form
      className={styles.form}
      noValidate
      aria-label={formLabel}
      onSubmit={(event) => void confirm(event)}
    >
      {children}
      <Field id={reasonId} label={reasonLabel} error={error ?? undefined}>
        <input
          id={reasonId}
          value={reason}
          aria-invalid={error === null ? undefined : true}
          aria-describedby={error === null ? undefined : `${reasonId}-error`}
          onChange={(event) => setReason(event.target.value)}
        />
      </Field>
      <div className={styles.actions}>
        <button type="submit" className="button" disabled={isPending}>
          {isPending ? pendingLabel : confirmLabel}
        </button>
        <button type="button" className="button" onClick={() => setIsConfirming(false)}>
          Keep it
        </button>
      </div>
    </form>
  );
}
