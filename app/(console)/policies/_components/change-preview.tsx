import { formatLimit, formatNumber } from "@/lib/console/format";
import type {
  PolicyChangePreview,
  PreviewedLimitChange,
} from "@/lib/control/policy/preview-policy-change";
import styles from "./policy-form.module.css";
import {
  describeGlobalChange,
  describeLimitBehaviour,
  describePolicyLimit,
  describeScope,
} from "./policy-words";

/** What an edit would change, in words: old and new per limit, and whom each change reaches. */
export function ChangePreview({ preview }: { preview: PolicyChangePreview }) {
  if (preview.isNoChange) {
    return (
      <p data-testid="preview-no-change">
        Nothing changes: these are the values in force for {preview.subject}.
      </p>
    );
  }
  return (
    <div className={styles.preview}>
      {preview.limits.map((change) => (
        <LimitChangeItem key={change.scope} change={change} />
      ))}
      {preview.fields.length > 0 ? (
        <ul className={styles.fieldChanges}>
          {preview.fields.map((field) => (
            <li key={`${field.owner}.${field.field}`}>
              {field.owner} <strong>{field.field}</strong>:{" "}
              {describeValue(field.field, field.before)} → {describeValue(field.field, field.after)}
            </li>
          ))}
        </ul>
      ) : null}
    </div>
  );
}

function describeValue(field: string, value: unknown): string {
  if (field === "match" && Array.isArray(value)) {
    if (value.length === 0) return "no match rules";
    return value
      .map(
        (rule: { method?: string; path?: string }) => `${rule.method ?? "?"} ${rule.path ?? "?"}`,
      )
      .join(", ");
  }
  if (field === "cost" && typeof value === "number") return `${formatNumber(value)} per request`;
  return typeof value === "string" ? value : JSON.stringify(value);
}

function LimitChangeItem({ change }: { change: PreviewedLimitChange }) {
  const { affected } = change;
  const behaviourChanged =
    change.before !== null &&
    change.after !== null &&
    (change.before.mode !== change.after.mode ||
      change.before.onStoreFailure !== change.after.onStoreFailure);
  const globalChange = describeGlobalChange(change.before, change.after);
  return (
    <section className={styles.previewItem} data-testid={`preview-${change.scope}`}>
      <h4>
        <code>{change.scope}</code>{" "}
        <span className="muted small">{describeScope(change.scope)}</span>
      </h4>
      <dl className={`facts ${styles.beforeAfter}`}>
        <dt>Before</dt>
        <dd data-testid="preview-before">
          {change.before === null ? "no limit of its own" : describePolicyLimit(change.before)}
          {behaviourChanged && change.before !== null ? (
            <span className="muted small"> ({describeLimitBehaviour(change.before)})</span>
          ) : null}
        </dd>
        <dt>After</dt>
        <dd data-testid="preview-after">
          <strong>{change.after === null ? "removed" : describePolicyLimit(change.after)}</strong>
          {behaviourChanged && change.after !== null ? (
            <span className="muted small"> ({describeLimitBehaviour(change.after)})</span>
          ) : null}
        </dd>
      </dl>
      {globalChange === null ? null : (
        <p className="small" data-testid="preview-global">
          {describeScope(change.scope)}: <strong>{globalChange}</strong>
          {change.after?.global === true
            ? " (one budget divided among the regions by demand)"
            : " (each region enforces the whole limit)"}
        </p>
      )}
      {change.reach === "anonymous" ? (
        <p className="small">Applies to anonymous requests, counted per client address.</p>
      ) : change.reach === "ceiling" ? (
        <p className="small" data-testid="preview-reach">
          Applies to every customer ({formatNumber(affected.customersInScope ?? 0)} in the
          registry). No override replaces a ceiling.
        </p>
      ) : (
        <>
          <p className="small" data-testid="preview-reach">
            <span data-testid="preview-customers-in-scope">
              {formatNumber(affected.customersInScope ?? 0)}
            </span>{" "}
            customer{affected.customersInScope === 1 ? "" : "s"} on tier {change.tier} in the
            registry (gateways name the tier; unregistered callers of this tier get it too).{" "}
            {affected.outrankedCount === 0 ? (
              <span data-testid="preview-outranked-count" data-count="0">
                None of them has an override on this layer: the change reaches all of them.
              </span>
            ) : (
              <span data-testid="preview-outranked-count" data-count={affected.outrankedCount}>
                <strong>{formatNumber(affected.outrankedCount)}</strong> of them keep
                {affected.outrankedCount === 1 ? "s" : ""} their own limit: their override still
                wins.
              </span>
            )}
          </p>
          {affected.outranked.length > 0 ? (
            <ul className={styles.outranked} data-testid="preview-outranked">
              {affected.outranked.map((customer) => (
                <li key={`${customer.customerId}-${customer.source}`}>
                  <code>{customer.customerId}</code>
                  {customer.displayName ? ` (${customer.displayName})` : ""}:{" "}
                  {customer.source === "incident" ? "incident override" : "override"}{" "}
                  {customer.limit === null ? "" : formatLimit(customer.limit)}
                </li>
              ))}
              {affected.outrankedCount > affected.outranked.length ? (
                <li className="muted">
                  and {formatNumber(affected.outrankedCount - affected.outranked.length)} more (
                  <a href="/overrides">see overrides</a>)
                </li>
              ) : null}
            </ul>
          ) : null}
        </>
      )}
      {affected.scaledByIncident.length > 0 ? (
        <p className="small" data-testid="preview-scaled">
          {affected.scaledByIncident.length === 1 ? "Customer" : "Customers"}{" "}
          {affected.scaledByIncident.slice(0, 5).join(", ")}
          {affected.scaledByIncident.length > 5
            ? ` and ${affected.scaledByIncident.length - 5} more`
            : ""}{" "}
          {affected.scaledByIncident.length === 1 ? "has" : "have"} an incident that multiplies this
          limit: the change reaches them too, multiplied.
        </p>
      ) : null}
      {affected.candidates.length > 0 ? (
        <p className="small">
          Dry-run candidate{affected.candidates.length === 1 ? "" : "s"}{" "}
          {affected.candidates.map((id, index) => (
            <span key={id}>
              {index > 0 ? ", " : ""}
              <a href={`/dry-run/${encodeURIComponent(id)}`}>{id}</a>
            </span>
          ))}{" "}
          target{affected.candidates.length === 1 ? "s" : ""} this rule: promoting one later
          replaces this edit.
        </p>
      ) : null}
    </section>
  );
}
