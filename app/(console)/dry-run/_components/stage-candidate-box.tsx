"use client";

import { useRouter } from "next/navigation";
import { useId, useState } from "react";
import { ConfirmDialog, type ConfirmResult } from "@/components/ui/confirm-dialog";
import { callApi } from "@/lib/api/api-client";
// A direct module import: this is client code, and the reason check is pure.
import { reasonProblem } from "@/lib/console/reason";
import {
  DEFAULT_STAGING,
  parseStagedSteps,
  type StagingDraft,
} from "../../policies/_components/staged-steps-draft";
import { StagedStepsEditor } from "../../policies/_components/staging-fields";
import styles from "../dry-run.module.css";

/**
 * Promote a candidate step by step instead of at once (admins): the steps, a reason, and a
 * confirm; the staged change's page follows it. Held back for approval, it is requested instead.
 */
export function StageCandidateBox({ id, version }: { id: string; version: number }) {
  const router = useRouter();
  const reasonId = useId();
  const [reason, setReason] = useState("");
  const [draft, setDraft] = useState<StagingDraft>({ ...DEFAULT_STAGING, isStaged: true });
  const [errors, setErrors] = useState<Record<string, string>>({});

  const stage = async (): Promise<ConfirmResult> => {
    const problem = reasonProblem(reason, "Give a reason first: it is kept in the audit log.");
    if (problem !== null) return { error: problem };
    const { steps, errors: stepErrors } = parseStagedSteps(draft);
    setErrors({ ...stepErrors });
    if (steps === null) return { error: "Fix the steps marked on the page first." };
    const answer = await callApi<{ stagedChange: { id: string } }>("/api/v1/staged-changes", {
      method: "POST",
      body: { candidateId: id, steps, reason: reason.trim() },
    });
    if (answer.ok) {
      router.push(`/staged-changes/${encodeURIComponent(answer.body.stagedChange.id)}`);
      return;
    }
    const { error } = answer;
    if (error.code !== "APPROVAL_REQUIRED") return { error: error.message };
    const requested = await callApi<{ changeRequest: { id: string } }>("/api/v1/change-requests", {
      method: "POST",
      body: {
        change: { kind: "staged-change.start", candidateId: id, steps },
        reason: reason.trim(),
      },
    });
    if (requested.ok) {
      router.push(`/change-requests/${encodeURIComponent(requested.body.changeRequest.id)}`);
      return;
    }
    return { error: `${error.message} Requesting it failed: ${requested.error.message}` };
  };

  return (
    <div className={styles.actionBox} data-testid="stage-candidate">
      <h3>Stage it over a slice</h3>
      <p className="small">
        Enforce it for a growing share of subjects, step by step, with a guard that reverts it by
        itself if the slice is rejected more than the rest (version {version}).
      </p>
      <StagedStepsEditor
        draft={draft}
        onChange={setDraft}
        errors={errors}
        idPrefix={`${reasonId}-steps`}
      />
      <label htmlFor={reasonId} className="small">
        Reason (required)
      </label>
      <textarea
        id={reasonId}
        rows={2}
        value={reason}
        onChange={(event) => setReason(event.target.value)}
      />
      <ConfirmDialog
        triggerLabel="Stage it…"
        title={`Stage candidate ${id}?`}
        confirmLabel="Start the staged change"
        tone="danger"
        disabled={reason.trim() === ""}
        onConfirm={stage}
      >
        <p>
          The first step puts {draft.steps[0]?.percent ?? "?"} % of subjects under the candidate's
          limit within moments; the rest keep the rule in force until the last step completes.
        </p>
      </ConfirmDialog>
    </div>
  );
}
