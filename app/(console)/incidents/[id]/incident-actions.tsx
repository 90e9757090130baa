"use client";

import { useRouter } from "next/navigation";
import { useId, useState } from "react";
import { readApiError } from "@/components/ops/api-error";
import styles from "@/components/ops/ops.module.css";
import { ConfirmDialog, type ConfirmResult } from "@/components/ui/confirm-dialog";

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
  const [extendReason, setExtendReason] = useState("Incident still in progress");
  const [revertReason, setRevertReason] = useState("Incident resolved; back to the normal limit");
  const [message, setMessage] = useState<string | null>(null);
  const [isExtending, setIsExtending] = useState(false);

  const post = async (action: "extend" | "revert", body: Record<string, unknown>) => {
    let response: Response;
    try {
      response = await fetch(`/api/v1/incidents/${encodeURIComponent(incidentId)}/${action}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ expectedVersion, ...body }),
      });
    } catch {
      return "The console did not answer. Check your connection and the incident's state.";
    }
    if (response.ok) return null;
    const payload: unknown = await response.json().catch(() => null);
    const error = readApiError(payload, response.status);
    return [error.message, ...error.fieldErrors.map((f) => `${f.path}: ${f.message}`)].join(" ");
  };

  const extend = async () => {
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
          <div className={styles.field} data-invalid={extendReason.trim() === ""}>
            <label htmlFor={`${id}-extend-reason`}>Reason to extend</label>
            <input
              id={`${id}-extend-reason`}
              value={extendReason}
              maxLength={1000}
              onChange={(event) => setExtendReason(event.target.value)}
            />
          </div>
          <button
            type="button"
            className="button"
            onClick={extend}
            disabled={isExtending || extendReason.trim() === ""}
            aria-busy={isExtending}
          >
            {isExtending ? "Extending…" : "Extend +15 min"}
          </button>
        </div>
        <div>
          <div className={styles.field} data-invalid={revertReason.trim() === ""}>
            <label htmlFor={`${id}-revert-reason`}>Reason to revert</label>
            <input
              id={`${id}-revert-reason`}
              value={revertReason}
              maxLength={1000}
              onChange={(event) => setRevertReason(event.target.value)}
            />
          </div>
          <ConfirmDialog
            triggerLabel="Revert now"
            title={`Revert ${incidentId}?`}
            confirmLabel="Revert override"
            tone="danger"
            disabled={revertReason.trim() === ""}
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
