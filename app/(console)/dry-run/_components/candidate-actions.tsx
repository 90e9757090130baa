"use client";

import { useRouter } from "next/navigation";
import { type ReactNode, useId, useState } from "react";
import { ConfirmDialog, type ConfirmResult } from "@/components/ui/confirm-dialog";
import { callApi } from "@/lib/api/api-client";
// A direct module import: this is client code, and the reason check is pure.
import { reasonProblem } from "@/lib/console/reason";
import styles from "../dry-run.module.css";
import { StageCandidateBox } from "./stage-candidate-box";

export interface CandidateActionsProps {
  id: string;
  version: number;
  /** What promoting does, in words: "Enforce 5/s, bursts of 10 on tier:free instead of …". */
  promoteSummary: string;
  /**
   * What the numbers say, over the span the page's totals state: the page's own comparison
   * sentence (`ComparisonSentence`), never a second computation.
   */
  evidence: ReactNode;
  canPromote: boolean;
  canDiscard: boolean;
}

/** Promote (admins) or discard (operators and admins) a candidate, each with a reason and a confirm. */
export function CandidateActions({
  id,
  version,
  promoteSummary,
  evidence,
  canPromote,
  canDiscard,
}: CandidateActionsProps) {
  const router = useRouter();
  const [promoteReason, setPromoteReason] = useState("");
  const [discardReason, setDiscardReason] = useState("");
  const promoteId = useId();
  const discardId = useId();

  const act = async (verb: "promote" | "discard", reason: string): Promise<ConfirmResult> => {
    const problem = reasonProblem(reason, "Give a reason first: it is kept in the audit log.");
    if (problem !== null) return { error: problem };
    const answer = await callApi<{ policyVersion: number | null }>(
      `/api/v1/candidates/${encodeURIComponent(id)}/${verb}`,
      { method: "POST", body: { expectedVersion: version, reason: reason.trim() } },
    );
    if (answer.ok) {
      const body = answer.body;
      const params = new URLSearchParams({
        done: verb === "promote" ? "promoted" : "discarded",
        id,
        ...(body.policyVersion === null ? {} : { version: String(body.policyVersion) }),
      });
      router.push(`/dry-run?${params.toString()}`);
      return;
    }
    const { error } = answer;
    if (verb === "promote" && error.code === "APPROVAL_REQUIRED") {
      // The admin confirmed the promotion: it goes to a second person instead of applying.
      const requested = await callApi<{ changeRequest: { id: string } }>(
        "/api/v1/change-requests",
        {
          method: "POST",
          body: {
            change: { kind: "candidate.promote", id, expectedVersion: version },
            reason: reason.trim(),
          },
        },
      );
      if (requested.ok) {
        router.push(`/change-requests/${encodeURIComponent(requested.body.changeRequest.id)}`);
        return;
      }
      return { error: `${error.message} Requesting it failed: ${requested.error.message}` };
    }
    if (error.code === "VERSION_CONFLICT") {
      return {
        error: `Someone changed this candidate since you opened it: ${error.message} Reload the page to see it.`,
      };
    }
    if (error.code === "NOT_FOUND") {
      return {
        error:
          "This candidate no longer exists: someone promoted or discarded it. Go back to the list.",
      };
    }
    const reasonError = error.fieldErrors.find((item) => item.path === "reason");
    return { error: reasonError ? `Reason: ${reasonError.message}` : error.message };
  };

  if (!canPromote && !canDiscard) {
    return <p className="muted">Operators can discard a candidate and admins can promote it.</p>;
  }
  return (
    <div className={styles.actions}>
      {canPromote ? (
        <div className={styles.actionBox}>
          <h3>Promote to enforcement</h3>
          <p className="small">{promoteSummary}</p>
          <label htmlFor={promoteId} className="small">
            Reason (required)
          </label>
          <textarea
            id={promoteId}
            rows={2}
            value={promoteReason}
            onChange={(event) => setPromoteReason(event.target.value)}
          />
          <ConfirmDialog
            triggerLabel="Promote…"
            title={`Enforce candidate ${id}?`}
            confirmLabel="Promote and enforce"
            tone="danger"
            disabled={promoteReason.trim() === ""}
            onConfirm={() => act("promote", promoteReason)}
          >
            <p>{promoteSummary}</p>
            <p data-testid="promote-evidence">{evidence}</p>
            <p>
              Requests above it get 429 as soon as each enforcer applies the new policy version
              (within moments). The change is audited with your reason.
            </p>
          </ConfirmDialog>
        </div>
      ) : (
        <p className="muted small">Only an admin can promote a candidate to enforcement.</p>
      )}
      {canPromote ? <StageCandidateBox id={id} version={version} /> : null}
      {canDiscard ? (
        <div className={styles.actionBox}>
          <h3>Discard</h3>
          <p className="small">Stop counting it. The rule in force stays as it is.</p>
          <label htmlFor={discardId} className="small">
            Reason (required)
          </label>
          <textarea
            id={discardId}
            rows={2}
            value={discardReason}
            onChange={(event) => setDiscardReason(event.target.value)}
          />
          <ConfirmDialog
            triggerLabel="Discard…"
            title={`Discard candidate ${id}?`}
            confirmLabel="Discard candidate"
            disabled={discardReason.trim() === ""}
            onConfirm={() => act("discard", discardReason)}
          >
            <p>
              Its counts stop; nothing that is enforced changes. The discard is audited with your
              reason.
            </p>
          </ConfirmDialog>
        </div>
      ) : null}
    </div>
  );
}
