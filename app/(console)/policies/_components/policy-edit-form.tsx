"use client";

import type { TLimitSpec } from "@limitplane/enforcer/policy";
import { useRouter } from "next/navigation";
import { type ReactNode, useState } from "react";
import { BacktestPanel } from "@/components/backtest/backtest-panel";
import { callApi } from "@/lib/api/api-client";
import { auditEntryHref } from "@/lib/console/chart-series";
// A direct module import: this is client code, and the reason check is pure.
import { MAX_REASON_LENGTH, reasonProblem } from "@/lib/console/reason";
import { requestedChangeOf } from "@/lib/console/requested-change";
import type {
  PolicyChangePreview,
  PreviewPolicyChangeOptions,
} from "@/lib/control/policy/preview-policy-change";
import type { PreviewStructureChangeOptions } from "@/lib/control/policy/preview-structure-change";
import { previewPolicyChangeAction, previewStructureChangeAction } from "../actions";
import { ChangePreview } from "./change-preview";
import type { FieldErrorMap } from "./limit-draft";
import { Field } from "./limit-fields";
import styles from "./policy-form.module.css";
import { DEFAULT_STAGING, parseStagedSteps, type StagingDraft } from "./staged-steps-draft";
import { StagingFields } from "./staging-fields";

/** What the fields make: the preview's options and the PATCH body (without version and reason). */
export type BuildResult =
  | {
      readonly ok: true;
      readonly preview: PreviewPolicyChangeOptions | PreviewStructureChangeOptions;
      readonly body: Readonly<Record<string, unknown>>;
      /**
       * The one rule this edit changes and its new limit, when it can instead be started as a
       * staged change; or why it cannot. Absent: the form offers no staging.
       */
      readonly stage?:
        | { readonly target: string; readonly limit: TLimitSpec }
        | { readonly unavailable: string };
    }
  | { readonly ok: false; readonly errors: FieldErrorMap };

export interface PolicyEditFormProps {
  /** `tier "free"`. */
  subject: string;
  /** The entity's version the page was rendered with: sent as expectedVersion. */
  version: number;
  /** Same-origin API path the change is sent to. */
  saveUrl: string;
  /**
   * How: PATCH an edit (the default), POST a new entity (no expectedVersion), DELETE one.
   * @default "PATCH"
   */
  method?: "PATCH" | "POST" | "DELETE";
  /** Where to go once saved (a creation's new page, the list after a deletion); absent: stay. */
  afterSaveHref?: string;
  /** The save button's label. @default "Save change" */
  saveLabel?: string;
  /** The preview button's label. @default "Preview change" */
  previewLabel?: string;
  /** The reason field's label. @default "Reason (required)" */
  reasonLabel?: string;
  /** Prefix of the form's element ids, unique per page. @default "edit" */
  idPrefix?: string;
  /** Validates the fields (client side, with the domain schemas). */
  build: () => BuildResult;
  /** The fields, given the errors to show at each (client checks and the API's). */
  renderFields: (errors: FieldErrorMap) => ReactNode;
  /**
   * Offer "stage it over a slice" beside "apply now" (tier, endpoint-class and ceiling edits);
   * `build` says which rule and limit through `stage`. @default false
   */
  isStageable?: boolean;
}

interface Saved {
  readonly policyVersion: number | null;
  readonly published: boolean;
  readonly auditEntryId: string;
}

/** A tier, endpoint-class or settings edit: what the backtest replays (creations and deletions are not). */
function isPolicyEdit(
  options: PreviewPolicyChangeOptions | PreviewStructureChangeOptions,
): options is PreviewPolicyChangeOptions {
  return (
    options.kind === "tier" || options.kind === "endpoint-class" || options.kind === "settings"
  );
}

function checkReason(reason: string): string | null {
  return reasonProblem(reason, "Say why you are making this change: it is kept in the audit log.");
}

/**
 * An edit of a tier, an endpoint class or the settings: fields, a required reason, a preview of
 * what changes (old and new, whom it reaches) that must be seen before saving, and the save
 * itself through the API with the version the page was opened at. A version conflict says that
 * someone changed it meanwhile and offers a reload; field errors from the API land at the field.
 */
export function PolicyEditForm({
  subject,
  version,
  saveUrl,
  method = "PATCH",
  afterSaveHref,
  saveLabel = "Save change",
  previewLabel = "Preview change",
  reasonLabel = "Reason (required)",
  idPrefix = "edit",
  build,
  renderFields,
  isStageable = false,
}: PolicyEditFormProps) {
  const router = useRouter();
  const [errors, setErrors] = useState<FieldErrorMap>({});
  const [reason, setReason] = useState("");
  const [preview, setPreview] = useState<{
    key: string;
    /** The edit previewed: a tier, endpoint-class or settings edit is also backtested. */
    options: PreviewPolicyChangeOptions | PreviewStructureChangeOptions;
    data: PolicyChangePreview & {
      readonly referrers?: readonly string[];
      readonly isBlocked?: boolean;
    };
  } | null>(null);
  const [formError, setFormError] = useState<string | null>(null);
  const [conflict, setConflict] = useState<string | null>(null);
  const [saved, setSaved] = useState<Saved | null>(null);
  /** Set when the save needs a second person: the API's words, and the change to request. */
  const [approval, setApproval] = useState<{
    message: string;
    change: Record<string, unknown> | null;
  } | null>(null);
  const [isPending, setIsPending] = useState(false);
  const [staging, setStaging] = useState<StagingDraft>(DEFAULT_STAGING);

  const current = build();
  const stage = current.ok ? current.stage : undefined;
  const stageUnavailable =
    stage === undefined
      ? "fix the fields above first."
      : "unavailable" in stage
        ? stage.unavailable
        : null;
  const isStaged = isStageable && staging.isStaged && stageUnavailable === null;
  const currentKey = current.ok ? JSON.stringify(current.body) : null;
  const isPreviewCurrent = preview !== null && preview.key === currentKey;

  const validate = (): (BuildResult & { ok: true }) | null => {
    const result = build();
    const reasonError = checkReason(reason);
    const next: Record<string, string> = result.ok ? {} : { ...result.errors };
    if (reasonError !== null) next.reason = reasonError;
    const steps = isStaged ? parseStagedSteps(staging) : null;
    if (steps !== null) Object.assign(next, steps.errors);
    setErrors(next);
    if (!result.ok || reasonError !== null || (steps !== null && steps.steps === null)) {
      setFormError("Fix the fields marked below.");
      return null;
    }
    return result;
  };

  const onPreview = async () => {
    setFormError(null);
    setSaved(null);
    const result = validate();
    if (result === null) return;
    setIsPending(true);
    try {
      const options = result.preview;
      const outcome =
        options.kind === "tier" || options.kind === "endpoint-class" || options.kind === "settings"
          ? await previewPolicyChangeAction(options)
          : await previewStructureChangeAction(options);
      if (!outcome.ok) {
        setErrors(
          Object.fromEntries(outcome.fieldErrors.map((error) => [error.path, error.message])),
        );
        setFormError(outcome.message);
        setPreview(null);
        return;
      }
      setPreview({ key: JSON.stringify(result.body), options, data: outcome.preview });
    } catch {
      setFormError("The preview could not be computed. Check your connection and try again.");
    } finally {
      setIsPending(false);
    }
  };

  const onSave = async () => {
    setFormError(null);
    const result = validate();
    if (result === null) return;
    if (isStaged) {
      await onStartStaged(result);
      return;
    }
    setIsPending(true);
    try {
      const answer = await callApi<Saved>(saveUrl, {
        method,
        body: {
          ...result.body,
          ...(method === "POST" ? {} : { expectedVersion: version }),
          reason: reason.trim(),
        },
      });
      if (answer.ok && afterSaveHref !== undefined) {
        router.push(afterSaveHref);
        router.refresh();
        return;
      }
      if (answer.ok) {
        const body = answer.body;
        setSaved({
          policyVersion: body.policyVersion,
          published: body.published,
          auditEntryId: body.auditEntryId,
        });
        setPreview(null);
        setReason("");
        setErrors({});
        router.refresh();
        return;
      }
      const { error } = answer;
      if (error.code === "VERSION_CONFLICT") {
        setConflict(error.message);
        return;
      }
      if (error.code === "APPROVAL_REQUIRED") {
        setApproval({
          message: error.message,
          change: requestedChangeOf(saveUrl, method, result.body, version),
        });
        return;
      }
      setErrors(Object.fromEntries(error.fieldErrors.map((item) => [item.path, item.message])));
      setFormError(
        error.code === "FORBIDDEN"
          ? `You may not make this change: ${error.message}`
          : error.message,
      );
    } catch {
      setFormError(
        "The change could not be sent, and it may or may not have been saved. Reload to see the current values before trying again.",
      );
    } finally {
      setIsPending(false);
    }
  };

  /** Starts the edit as a staged change; the staged change's page follows it from there. */
  const onStartStaged = async (result: BuildResult & { ok: true }) => {
    const steps = parseStagedSteps(staging).steps;
    if (result.stage === undefined || "unavailable" in result.stage || steps === null) return;
    const change = { target: result.stage.target, limit: result.stage.limit, steps };
    setIsPending(true);
    try {
      const answer = await callApi<{ stagedChange: { id: string } }>("/api/v1/staged-changes", {
        method: "POST",
        body: { ...change, reason: reason.trim() },
      });
      if (answer.ok) {
        router.push(`/staged-changes/${encodeURIComponent(answer.body.stagedChange.id)}`);
        return;
      }
      const { error } = answer;
      if (error.code === "APPROVAL_REQUIRED") {
        setApproval({
          message: error.message,
          change: { kind: "staged-change.start", ...change },
        });
        return;
      }
      setErrors(Object.fromEntries(error.fieldErrors.map((item) => [item.path, item.message])));
      setFormError(error.message);
    } catch {
      setFormError(
        "The staged change could not be sent, and it may or may not have started. Reload to see the current state before trying again.",
      );
    } finally {
      setIsPending(false);
    }
  };

  const onRequestApproval = async () => {
    if (approval?.change == null) return;
    setIsPending(true);
    setFormError(null);
    try {
      const answer = await callApi<{ changeRequest: { id: string } }>("/api/v1/change-requests", {
        method: "POST",
        body: { change: approval.change, reason: reason.trim() },
      });
      if (answer.ok) {
        router.push(`/change-requests/${encodeURIComponent(answer.body.changeRequest.id)}`);
        return;
      }
      setFormError(answer.error.message);
    } catch {
      setFormError("The request could not be sent. Check your connection and try again.");
    } finally {
      setIsPending(false);
    }
  };

  return (
    <form
      className={styles.form}
      noValidate
      onSubmit={(event) => {
        event.preventDefault();
        void onPreview();
      }}
      aria-label={`Edit ${subject}`}
    >
      {conflict !== null ? (
        <div className={styles.conflict} role="alert" data-testid="version-conflict">
          <p>
            <strong>Someone changed {subject} since you opened it.</strong> Your change was not
            saved.
          </p>
          <p className="small">{conflict}</p>
          <button type="button" className="button" onClick={() => window.location.reload()}>
            Reload the current values
          </button>
        </div>
      ) : null}
      {saved !== null ? (
        <div className={styles.saved} role="status" data-testid="saved">
          <strong>Saved.</strong>{" "}
          {saved.policyVersion === null ? (
            "Enforcers see no difference, so no new policy version was needed."
          ) : (
            <>
              Policy version{" "}
              <strong data-testid="saved-policy-version">{saved.policyVersion}</strong>{" "}
              {saved.published
                ? "is published: enforcers apply it within moments."
                : "is made; the publisher will send it to the enforcers shortly."}
            </>
          )}{" "}
          <a href={auditEntryHref(saved.auditEntryId)}>See the audit entry</a>.
        </div>
      ) : null}
      {approval !== null ? (
        <div className={styles.conflict} role="alert" data-testid="approval-required">
          <p>
            <strong>This change needs a second person's approval.</strong> It was not saved.
          </p>
          <p className="small">{approval.message}</p>
          {approval.change !== null ? (
            <button
              type="button"
              className="button"
              onClick={() => void onRequestApproval()}
              disabled={isPending}
              aria-busy={isPending}
            >
              Request approval
            </button>
          ) : null}
        </div>
      ) : null}
      {formError !== null ? (
        <p className={styles.formError} role="alert" data-testid="form-error">
          {formError}
        </p>
      ) : null}

      {renderFields(errors)}

      {isStageable ? (
        <StagingFields
          draft={staging}
          onChange={setStaging}
          errors={errors}
          unavailable={stageUnavailable}
          idPrefix={`${idPrefix}-staging`}
        />
      ) : null}

      <Field
        id={`${idPrefix}-reason`}
        label={reasonLabel}
        error={errors.reason}
        help="Why, in a sentence: kept in the audit log with the change."
      >
        <textarea
          id={`${idPrefix}-reason`}
          rows={2}
          maxLength={MAX_REASON_LENGTH + 100}
          value={reason}
          onChange={(event) => setReason(event.target.value)}
          aria-invalid={errors.reason ? true : undefined}
          aria-describedby={errors.reason ? `${idPrefix}-reason-error` : undefined}
        />
      </Field>

      <div className={styles.actions}>
        <button type="submit" className="button" disabled={isPending || conflict !== null}>
          {isPending && !isPreviewCurrent ? "Working…" : previewLabel}
        </button>
        {preview !== null && !isPreviewCurrent ? (
          <span className="muted small">The fields changed since the preview: preview again.</span>
        ) : null}
      </div>

      {preview !== null && isPreviewCurrent ? (
        <section
          className={styles.previewPanel}
          aria-labelledby={`${idPrefix}-preview-heading`}
          data-testid="change-preview"
        >
          <h3 id={`${idPrefix}-preview-heading`}>What this change does</h3>
          {preview.data.version !== version ? (
            <p className={styles.conflict} role="alert" data-testid="preview-stale">
              {subject} has changed since you opened it (version {version} then,{" "}
              {preview.data.version} now). Saving will be refused: reload to start from the current
              values.
            </p>
          ) : null}
          {preview.data.referrers !== undefined && preview.data.referrers.length > 0 ? (
            <div className={styles.conflict} role="alert" data-testid="preview-referrers">
              <p>
                <strong>{subject} cannot be deleted while these refer to it:</strong>
              </p>
              <ul>
                {preview.data.referrers.map((referrer) => (
                  <li key={referrer}>{referrer}</li>
                ))}
              </ul>
              <p className="small">Change or remove them first, then preview again.</p>
            </div>
          ) : null}
          <ChangePreview preview={preview.data} />
          {isPolicyEdit(preview.options) && !preview.data.isNoChange ? (
            <BacktestPanel
              draft={preview.options}
              runOn="mount"
              title="Backtest: the last 24 h of recorded traffic under this edit"
            />
          ) : null}
          <div className={styles.actions}>
            <button
              type="button"
              className="button"
              onClick={() => void onSave()}
              disabled={
                isPending ||
                preview.data.isNoChange ||
                preview.data.isBlocked === true ||
                conflict !== null
              }
              aria-busy={isPending}
            >
              {isPending ? "Saving…" : isStaged ? "Start the staged change" : saveLabel}
            </button>
            <button
              type="button"
              className="button button-secondary"
              onClick={() => setPreview(null)}
              disabled={isPending}
            >
              Keep editing
            </button>
          </div>
        </section>
      ) : null}
    </form>
  );
}
