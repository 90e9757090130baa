"use client";

import { useRouter } from "next/navigation";
import { useId, useState } from "react";
import styles from "@/components/ops/ops.module.css";
import { ReasonField, reasonProblem } from "@/components/ops/reason-field";
import { ConfirmDialog } from "@/components/ui/confirm-dialog";
import { callApi } from "@/lib/api/api-client";
import type { StagedChangeState } from "@/lib/control/staged-change/staged-change-record";

export type StagedVerb = "pause" | "resume" | "advance" | "complete" | "abort";

const LABELS: Record<StagedVerb, { readonly idle: string; readonly busy: string }> = {
  pause: { idle: "Pause", busy: "Pausing…" },
  resume: { idle: "Resume", busy: "Resuming…" },
  advance: { idle: "Advance to the next step", busy: "Advancing…" },
  complete: { idle: "Complete: make it the policy", busy: "Completing…" },
  abort: { idle: "Abort", busy: "Aborting…" },
};

/**
 * Which verbs the state allows, as the services check them (`assertState`): pause a running
 * change, resume a paused one, advance before the last step, complete at the last step, abort
 * while live. Pure, so the buttons and their tests agree with the API's refusals.
 */
export function allowedVerbs(
  state: StagedChangeState,
  stepIndex: number,
  stepCount: number,
): ReadonlySet<StagedVerb> {
  const allowed = new Set<StagedVerb>();
  if (state !== "running" && state !== "paused") return allowed;
  allowed.add(state === "running" ? "pause" : "resume");
  allowed.add(stepIndex < stepCount - 1 ? "advance" : "complete");
  allowed.add("abort");
  return allowed;
}

/**
 * Pause, resume, advance, complete or abort a live staged change through the API, with the
 * version the page was rendered at; abort asks first. A refusal (someone else acted meanwhile,
 * the guard reverted it) is shown in words, and the page reloads to show the current state.
 */
export function StagedChangeActions({
  id,
  version,
  state,
  stepIndex,
  stepCount,
  canWrite,
  canPromote,
}: {
  id: string;
  version: number;
  state: StagedChangeState;
  stepIndex: number;
  stepCount: number;
  /** Pause, resume and abort (operators). */
  canWrite: boolean;
  /** Advance and complete (admins: they rewrite the rule). */
  canPromote: boolean;
}) {
  const router = useRouter();
  const prefix = useId();
  const [reason, setReason] = useState("");
  const [isTried, setIsTried] = useState(false);
  const [pending, setPending] = useState<StagedVerb | null>(null);
  const [message, setMessage] = useState<string | null>(null);
  const allowed = allowedVerbs(state, stepIndex, stepCount);
  const mayRun = (verb: StagedVerb) =>
    allowed.has(verb) && (verb === "advance" || verb === "complete" ? canPromote : canWrite);

  /** Runs the verb; returns the API's words when it was refused. */
  const run = async (verb: StagedVerb): Promise<string | null> => {
    setIsTried(true);
    if (reasonProblem(reason) !== null) {
      document.getElementById(`${prefix}-reason`)?.focus();
      return "Give a reason first: it is kept in the audit log.";
    }
    setPending(verb);
    setMessage(null);
    try {
      const answer = await callApi(`/api/v1/staged-changes/${encodeURIComponent(id)}/${verb}`, {
        method: "POST",
        body: { expectedVersion: version, reason: reason.trim() },
      });
      if (answer.ok) {
        setReason("");
        setIsTried(false);
        router.refresh();
        return null;
      }
      const { error } = answer;
      const words = [
        error.message,
        ...error.fieldErrors.map((field) => `${field.path}: ${field.message}`),
      ].join(" ");
      setMessage(words);
      router.refresh();
      return words;
    } catch {
      const words = "The console did not answer. Reload to see the staged change's state.";
      setMessage(words);
      return words;
    } finally {
      setPending(null);
    }
  };

  if (allowed.size === 0) return null;
  if (!canWrite && !canPromote) {
    return <p className="panel muted">An operator or an admin steers this staged change.</p>;
  }
  const button = (verb: StagedVerb, tone: "" | " button-secondary" = "") =>
    mayRun(verb) ? (
      <button
        key={verb}
        type="button"
        className={`button${tone}`}
        onClick={() => void run(verb)}
        disabled={pending !== null}
        aria-busy={pending === verb}
      >
        {pending === verb ? LABELS[verb].busy : LABELS[verb].idle}
      </button>
    ) : null;

  return (
    <section className="panel" aria-labelledby={`${prefix}-heading`} data-testid="staged-actions">
      <h2 id={`${prefix}-heading`}>Steer it</h2>
      {message !== null ? (
        <p className={styles.fieldError} role="alert" data-testid="staged-action-error">
          {message}
        </p>
      ) : null}
      <ReasonField
        id={`${prefix}-reason`}
        label="Reason"
        value={reason}
        onChange={setReason}
        showProblem={isTried}
        hint="Why you pause, resume, advance, complete or abort it: kept in the audit log."
      />
      <div className={styles.actions}>
        {button("pause", " button-secondary")}
        {button("resume")}
        {button("advance")}
        {button("complete")}
        {mayRun("abort") ? (
          <ConfirmDialog
            triggerLabel={LABELS.abort.idle}
            title={`Abort staged change "${id}"?`}
            confirmLabel="Abort the staged change"
            tone="danger"
            disabled={pending !== null}
            onConfirm={async () => {
              const refused = await run("abort");
              return refused === null ? undefined : { error: refused };
            }}
          >
            Every subject goes back to the limit in force before it started. The slice&apos;s
            counters carry on under the old limit. This cannot be undone: start a new staged change
            to try again.
          </ConfirmDialog>
        ) : null}
      </div>
      {!canPromote ? (
        <p className="small muted">Advancing and completing rewrite the rule: admins only.</p>
      ) : null}
    </section>
  );
}
