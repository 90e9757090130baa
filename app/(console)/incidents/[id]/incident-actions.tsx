"use client";

import { useRouter } from "next/navigation";
import { useId, useState } from "react";
import styles from "@/components/ops/ops.module.css";
import { ReasonField, reasonProblem } from "@/components/ops/reason-field";
import { ConfirmDialog, type ConfirmResult } from "@/components/ui/confirm-dialog";
import { callApi } from "@/lib/api/api-client";

const EXTEND_BY_MS = 15 * 60_000;

/**
 * Extend (+15 min, one click) and revert (one click and a confirmation) a current incident, through
 * the API; the page refreshes to show the new expiry and each enforcer's confirmation.
 */
export function IncidentActions({
  incidentId,
  expectedVersion,
  expiresAt,
  customerId,
  scopeWords,
}: {
  incidentId: string;
  expectedVersion: number;
  expiresAt: string;
  customerId: string;
  scopeWords: string;
}) {
  const router = useRouter();
  const id = useId();
  // Empty: a person types why, so the audit log never fills with boilerplate.
  const [extendReason, setExtendReason] = useState("");
  const [revertReason, setRevertReason] = useState("");
  const [isExtendTried, setIsExtendTried] = useState(false);
  const [message, setMessage] = useState<string | null>(null);
  const [isExtending, setIsExtending] = useState(false);

  const post = async (action: "extend" | "revert", body: Record<string, unknown>) => {
    let answer: Awaited<ReturnType<typeof callApi>>;
    try {
      answer = await callApi(`/api/v1/incidents/${encodeURIComponent(incidentId)}/${action}`, {
        method: "POST",
        body: { expectedVersion, ...body },
      });
    } catch {
      return "The console did not answer. Check your connection and the incident's state.";
    }
    if (answer.ok) return null;
    const { error } = answer;
    return [error.message, ...error.fieldErrors.map((f) => `${f.path}: ${f.message}`)].join(" ");
  };

  const extend = async () => {
    setIsExtendTried(true);
    if (reasonProblem(extendReason) !== null) {
      document.getElementById(`${id}-extend-reason`)?.focus();
      return;
    }
    setIsExtending(true);
    setMessage(null);
    const from = Math.max(Date.parse(expiresAt), Date.now());
    const problem = await post("extend", {
      expiresAt: new Date(from + EXTEND_BY_MS).toISOString(),
      reason: extendReason.trim(),
    });
    setIsExtending(false);
    if (problem !== null) setMessage(problem);
    else router.refresh();
  };

  const revert = async (): Promise<ConfirmResult> => {
    const problem = await post("revert", { reason: revertReason.trim() });
    if (problem !== null) return { error: problem };
    router.refresh();
  };

  return (
    <section className="panel" aria-labelledby={`${id}-heading`}>
      <h2 id={`${id}-heading`}>Extend or revert</h2>
      <div className={styles.formGrid}>
        <div>
          <ReasonField
            id={`${id}-extend-reason`}
            label="Reason to extend"
            value={extendReason}
            onChange={setExtendReason}
            showProblem={isExtendTried}
            hint="Why the raised limit is still needed; it goes in the audit log."
          />
          <button
            type="button"
            className="button"
            onClick={extend}
            disabled={isExtending}
            aria-busy={isExtending}
          >
            {isExtending ? "Extending…" : "Extend +15 min"}
          </button>
        </div>
        <div>
          <ReasonField
            id={`${id}-revert-reason`}
            label="Reason to revert"
            value={revertReason}
            onChange={setRevertReason}
            showProblem={false}
            hint="Type why before reverting; it goes in the audit log."
          />
          <ConfirmDialog
            triggerLabel="Revert now"
            title={`Revert ${incidentId}?`}
            confirmLabel="Revert override"
            tone="danger"
            disabled={reasonProblem(revertReason) !== null}
            onConfirm={revert}
          >
            <p>
              {customerId} goes back to its normal limit on {scopeWords} at once; requests above it
              are rejected again.
            </p>
          </ConfirmDialog>
        </div>
      </div>
      {message !== null ? (
        <p className={styles.fieldError} role="alert">
          {message}
        </p>
      ) : null}
    </section>
  );
}
