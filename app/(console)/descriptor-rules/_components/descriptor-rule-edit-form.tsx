"use client";

import {
  type FieldPath,
  fieldErrorsFromZod,
  formatFieldPath,
  type TDescriptorRule,
  ZDescriptorRule,
} from "@limitplane/enforcer/policy";
import { useRouter } from "next/navigation";
import { useState } from "react";
import { callApi } from "@/lib/api/api-client";
import { reasonProblem } from "@/lib/console/reason";
import {
  draftOf,
  type FieldErrorMap,
  type LimitDraft,
  validateSpecDraft,
} from "../../policies/_components/limit-draft";
import { Field, LimitFields } from "../../policies/_components/limit-fields";
import styles from "../../policies/_components/policy-form.module.css";

type LimitKind = "limit" | "unlimited" | "deny";

/** The rule's mode, failure policy and durability sit on the rule; the limit fields show them. */
const MOVED_TO_LIMIT: Readonly<Record<string, string>> = {
  mode: "limit.mode",
  onStoreFailure: "limit.onStoreFailure",
  durability: "limit.durability",
};

/** Whether this form shows an error at `path` beside its field. */
function isShownField(path: string): boolean {
  return (
    path === "limit" ||
    path.startsWith("limit.") ||
    path.startsWith("replaces") ||
    ["name", "wildcardCounter", "detailedMetric", "reason"].includes(path)
  );
}

function errorMapOf(errors: readonly { path: string; message: string }[]): FieldErrorMap {
  const map: Record<string, string> = {};
  for (const error of errors) map[MOVED_TO_LIMIT[error.path] ?? error.path] ??= error.message;
  return map;
}

/**
 * An edit of one descriptor rule's limit and options (its domain and pattern stay: a new pattern
 * is a new rule). Checked with the policy's own schema before it is sent; the API's field errors
 * land at the field they name. Saved with the version the page was opened at.
 */
export function DescriptorRuleEditForm({ rule }: { rule: TDescriptorRule & { version: number } }) {
  // The saved line lives outside the fields, which start again from each new version of the rule
  // (keyed by it): remounting them with the line inside lost it as soon as the refresh after a
  // save landed.
  const [saved, setSaved] = useState<{ policyVersion: number | null } | null>(null);
  return (
    <>
      {saved !== null ? (
        <p role="status" data-testid="rule-edit-saved">
          {saved.policyVersion === null
            ? "Saved; the policy the service decides by did not change."
            : `Saved as policy version ${saved.policyVersion}.`}
        </p>
      ) : null}
      <RuleEditFields
        key={rule.version}
        rule={rule}
        onSaving={() => setSaved(null)}
        onSaved={setSaved}
      />
    </>
  );
}

function RuleEditFields({
  rule,
  onSaving,
  onSaved,
}: {
  rule: TDescriptorRule & { version: number };
  onSaving: () => void;
  onSaved: (saved: { policyVersion: number | null }) => void;
}) {
  const router = useRouter();
  const spec = typeof rule.limit === "string" ? null : rule.limit;
  const [kind, setKind] = useState<LimitKind>(
    typeof rule.limit === "string" ? rule.limit : "limit",
  );
  const [draft, setDraft] = useState<LimitDraft>(
    draftOf({
      ...(spec ?? { algorithm: "fixed-window", limit: 100, windowMs: 60_000 }),
      mode: rule.mode,
      onStoreFailure: rule.onStoreFailure,
      ...(rule.durability === undefined ? {} : { durability: rule.durability }),
    }),
  );
  const [name, setName] = useState(rule.name ?? "");
  const [replaces, setReplaces] = useState(rule.replaces.join(", "));
  const [wildcardCounter, setWildcardCounter] = useState(rule.wildcardCounter);
  const [detailedMetric, setDetailedMetric] = useState(rule.detailedMetric);
  const [reason, setReason] = useState("");
  const [errors, setErrors] = useState<FieldErrorMap>({});
  const [formError, setFormError] = useState<string | null>(null);
  const [isPending, setIsPending] = useState(false);

  /** The PATCH body's fields, or the problems at each field. */
  const build = ():
    | { ok: true; body: Record<string, unknown> }
    | { ok: false; errors: FieldErrorMap } => {
    const checked = kind === "limit" ? validateSpecDraft(draft, ["limit"]) : null;
    const limit = kind === "limit" ? (checked?.limit ?? null) : kind;
    const body = {
      limit,
      mode: draft.mode,
      onStoreFailure: draft.onStoreFailure,
      // Sent as chosen, async too: an edit from replicated back to async must be saved.
      durability: draft.durability,
      name: name.trim() === "" ? null : name.trim(),
      replaces: replaces
        .split(",")
        .map((item) => item.trim())
        .filter((item) => item !== ""),
      wildcardCounter,
      detailedMetric,
    };
    const found: Record<string, string> = { ...(checked?.errors ?? {}) };
    if (limit !== null) {
      // Only the rule's policy fields are checked here: its raises have their own form, the
      // record's version and times are not part of a rule, and the server checks it all again.
      const parsed = ZDescriptorRule.safeParse({
        id: rule.id,
        domain: rule.domain,
        descriptor: rule.descriptor,
        ...body,
        raises: [],
      });
      if (!parsed.success) {
        for (const error of fieldErrorsFromZod(parsed.error)) {
          const path = formatFieldPath(error.path as FieldPath);
          found[MOVED_TO_LIMIT[path] ?? path] ??= error.message;
        }
      }
    }
    const reasonError = reasonProblem(reason, "Say why: the reason is kept in the audit log.");
    if (reasonError !== null) found.reason = reasonError;
    return Object.keys(found).length > 0 ? { ok: false, errors: found } : { ok: true, body };
  };

  const save = async () => {
    setFormError(null);
    onSaving();
    const built = build();
    if (!built.ok) {
      setErrors(built.errors);
      // A problem at a field this form does not show is named in the message itself.
      const unshown = Object.entries(built.errors).filter(([path]) => !isShownField(path));
      setFormError(
        unshown.length === 0
          ? "Correct the fields marked below."
          : `Correct the fields marked below. ${unshown.map(([path, message]) => `${path}: ${message}`).join("; ")}`,
      );
      return;
    }
    setErrors({});
    setIsPending(true);
    try {
      const result = await callApi<{ rule: { version: number }; policyVersion: number | null }>(
        `/api/v1/descriptor-rules/${encodeURIComponent(rule.id)}`,
        {
          method: "PATCH",
          body: { ...built.body, expectedVersion: rule.version, reason: reason.trim() },
        },
      );
      if (result.ok) {
        onSaved({ policyVersion: result.body.policyVersion });
        setReason("");
        router.refresh();
        return;
      }
      setErrors(errorMapOf(result.error.fieldErrors));
      setFormError(result.error.message);
    } catch {
      setFormError("The change could not be sent. Try again.");
    } finally {
      setIsPending(false);
    }
  };

  return (
    <form
      className={styles.form}
      noValidate
      aria-label="Edit descriptor rule"
      onSubmit={(event) => {
        event.preventDefault();
        void save();
      }}
    >
      {formError !== null ? (
        <div className={styles.formError} role="alert" data-testid="rule-edit-error">
          <p>{formError}</p>
        </div>
      ) : null}
      <p className="muted small" data-testid="rule-no-backtest">
        No preview or backtest for this edit: the traffic record holds what gateways decided per
        customer, tier and endpoint class, and the rate-limit service does not record its descriptor
        calls, so there is no descriptor traffic to replay a new limit against. To try a limit on
        real traffic first, save it in shadow mode (dry-run) and watch its would-rejects in the
        chart above, then switch it to enforce.
      </p>
      <Field id="rule-limit-kind" label="What it does" error={errors.limit}>
        <select
          id="rule-limit-kind"
          value={kind}
          onChange={(event) => setKind(event.target.value as LimitKind)}
        >
          <option value="limit">Limit</option>
          <option value="unlimited">Unlimited (answered OK, nothing counted)</option>
          <option value="deny">Deny (every request over the limit)</option>
        </select>
      </Field>
      {kind === "limit" ? (
        <LimitFields
          legend="Limit"
          path={["limit"]}
          draft={draft}
          errors={errors}
          onChange={setDraft}
          idPrefix="rule-limit"
        />
      ) : null}
      <div className={styles.fieldRow}>
        <Field id="rule-name" label="Name (what replaces of other rules names)" error={errors.name}>
          <input id="rule-name" value={name} onChange={(event) => setName(event.target.value)} />
        </Field>
        <Field
          id="rule-replaces"
          label="Replaces (names, comma-separated)"
          error={Object.entries(errors).find(([path]) => path.startsWith("replaces"))?.[1]}
        >
          <input
            id="rule-replaces"
            value={replaces}
            onChange={(event) => setReplaces(event.target.value)}
          />
        </Field>
      </div>
      <div className={styles.fieldRow}>
        <Field id="rule-wildcard" label="Wildcard values count" error={errors.wildcardCounter}>
          <select
            id="rule-wildcard"
            value={wildcardCounter}
            onChange={(event) =>
              setWildcardCounter(event.target.value as TDescriptorRule["wildcardCounter"])
            }
          >
            <option value="per-value">each value on its own</option>
            <option value="shared">all on one shared counter</option>
          </select>
        </Field>
        <label>
          <input
            type="checkbox"
            checked={detailedMetric}
            onChange={(event) => setDetailedMetric(event.target.checked)}
          />{" "}
          Detailed metrics (one series per value)
        </label>
      </div>
      <Field id="rule-reason" label="Reason (required)" error={errors.reason}>
        <input
          id="rule-reason"
          value={reason}
          onChange={(event) => setReason(event.target.value)}
        />
      </Field>
      <button type="submit" className="button" disabled={isPending}>
        {isPending ? "Saving…" : "Save rule"}
      </button>
    </form>
  );
}
