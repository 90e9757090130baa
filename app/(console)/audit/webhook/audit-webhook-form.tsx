"use client";

import { useRouter } from "next/navigation";
import { useId, useState } from "react";
import { CheckboxField, Field } from "@/app/(console)/policies/_components/limit-fields";
import styles from "@/app/(console)/policies/_components/policy-form.module.css";
import { ReasonField, reasonProblem } from "@/components/ops/reason-field";
import { callApi } from "@/lib/api/api-client";

/** What the form sends, from what the admin entered; field errors when it cannot be sent. */
export type AuditWebhookDraftResult =
  | { readonly kind: "send"; readonly body: { url: string | null; rotateSigningSecret?: true } }
  | { readonly kind: "unchanged" }
  | { readonly kind: "invalid"; readonly errors: Readonly<Record<string, string>> };

export interface AuditWebhookDraft {
  readonly isEnabled: boolean;
  readonly url: string;
  readonly isRotating: boolean;
}

/**
 * The PUT body for a draft, checked as far as the browser can: a URL is required while the
 * webhook is on and must parse; what else the console refuses (a private address, a user name
 * in it) comes back from the API, at the same field.
 */
export function auditWebhookBody(
  draft: AuditWebhookDraft,
  storedUrl: string | null,
): AuditWebhookDraftResult {
  if (!draft.isEnabled) {
    return storedUrl === null ? { kind: "unchanged" } : { kind: "send", body: { url: null } };
  }
  const url = draft.url.trim();
  if (url === "") {
    return {
      kind: "invalid",
      errors: { url: "Give the receiver's URL (https://…), or untick the box to turn it off." },
    };
  }
  if (!URL.canParse(url) || !/^https?:$/.test(new URL(url).protocol)) {
    return {
      kind: "invalid",
      errors: { url: "url must be an https:// or http:// URL, such as https://siem.example/hook" },
    };
  }
  if (url === storedUrl && !draft.isRotating) return { kind: "unchanged" };
  return {
    kind: "send",
    body: { url, ...(draft.isRotating ? { rotateSigningSecret: true } : {}) },
  };
}

interface SavedAnswer {
  readonly signingSecret: string | null;
  readonly settings: { readonly url: string | null };
}

/**
 * Sets, changes or turns off the audit webhook through `PUT /api/v1/audit-webhook` with the
 * version the page read and a reason. A new signing secret is shown once, here, after saving.
 */
export function AuditWebhookForm({
  url,
  version,
  hasSigningSecret,
}: {
  /** As stored; null when the webhook is off. */
  url: string | null;
  version: number;
  hasSigningSecret: boolean;
}) {
  const router = useRouter();
  const prefix = useId();
  const [draft, setDraft] = useState<AuditWebhookDraft>({
    isEnabled: url !== null || version === 0,
    url: url ?? "",
    isRotating: false,
  });
  const [reason, setReason] = useState("");
  const [isTried, setIsTried] = useState(false);
  const [isPending, setIsPending] = useState(false);
  const [message, setMessage] = useState<string | null>(null);
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [saved, setSaved] = useState<SavedAnswer | null>(null);

  const onSave = async () => {
    setIsTried(true);
    setSaved(null);
    const result = auditWebhookBody(draft, url);
    if (result.kind === "invalid") {
      setErrors({ ...result.errors });
      setMessage("Fix the field marked below.");
      document.getElementById(`${prefix}-url`)?.focus();
      return;
    }
    setErrors({});
    if (result.kind === "unchanged") {
      setMessage("Nothing changed: change the URL, turn it on or off, or ask for a new secret.");
      return;
    }
    if (reasonProblem(reason) !== null) {
      setMessage(null);
      document.getElementById(`${prefix}-reason`)?.focus();
      return;
    }
    setIsPending(true);
    setMessage(null);
    try {
      const answer = await callApi<SavedAnswer>("/api/v1/audit-webhook", {
        method: "PUT",
        body: { ...result.body, expectedVersion: version, reason: reason.trim() },
      });
      if (answer.ok) {
        setReason("");
        setIsTried(false);
        setDraft((current) => ({ ...current, isRotating: false }));
        setSaved(answer.body);
        router.refresh();
        return;
      }
      const { error } = answer;
      setErrors(Object.fromEntries(error.fieldErrors.map((item) => [item.path, item.message])));
      setMessage(error.message);
    } catch {
      setMessage("The console did not answer. Reload to see the webhook as it stands.");
    } finally {
      setIsPending(false);
    }
  };

  return (
    <form
      className={styles.form}
      noValidate
      aria-label="Audit webhook"
      onSubmit={(event) => {
        event.preventDefault();
        void onSave();
      }}
    >
      {message !== null ? (
        <p className={styles.formError} role="alert" data-testid="webhook-error">
          {message}
        </p>
      ) : null}
      {saved !== null ? (
        <div className={styles.saved} role="status" data-testid="webhook-saved">
          <p>
            <strong>Saved.</strong>{" "}
            {saved.settings.url === null
              ? "The webhook is off; entries not yet sent were dropped."
              : "The change is in the audit log, and is the first entry the URL receives."}
          </p>
          {saved.signingSecret !== null ? (
            <p>
              Signing secret, shown this once:{" "}
              <code className="mono" data-testid="webhook-signing-secret">
                {saved.signingSecret}
              </code>
              . Give it to the receiver now to verify <code>Limitplane-Signature</code>; the console
              never shows it again.
            </p>
          ) : null}
        </div>
      ) : null}
      <CheckboxField
        id={`${prefix}-enabled`}
        label="Send every audit entry to this URL"
        help="Unticked: the webhook is off, and entries not yet sent are dropped."
        isChecked={draft.isEnabled}
        onChange={(isEnabled) => setDraft({ ...draft, isEnabled })}
      />
      <Field
        id={`${prefix}-url`}
        label="Receiver URL"
        help="https:// recommended. A query string is kept but left out of the audit log."
        error={errors.url}
      >
        <input
          id={`${prefix}-url`}
          type="url"
          inputMode="url"
          autoComplete="off"
          spellCheck={false}
          placeholder="https://siem.example/limitplane"
          value={draft.url}
          disabled={!draft.isEnabled}
          aria-invalid={errors.url ? true : undefined}
          aria-describedby={errors.url ? `${prefix}-url-error` : undefined}
          onChange={(event) => setDraft({ ...draft, url: event.target.value })}
        />
      </Field>
      {hasSigningSecret && draft.isEnabled ? (
        <CheckboxField
          id={`${prefix}-rotate`}
          label="Make a new signing secret"
          help="The current one stops working at once."
          isChecked={draft.isRotating}
          onChange={(isRotating) => setDraft({ ...draft, isRotating })}
        />
      ) : null}
      <ReasonField
        id={`${prefix}-reason`}
        label="Reason"
        value={reason}
        onChange={setReason}
        showProblem={isTried}
        hint="Why you change the webhook: kept in the audit log."
      />
      <div className={styles.actions}>
        <button type="submit" className="button" disabled={isPending} aria-busy={isPending}>
          {isPending ? "Saving…" : "Save webhook"}
        </button>
      </div>
    </form>
  );
}
