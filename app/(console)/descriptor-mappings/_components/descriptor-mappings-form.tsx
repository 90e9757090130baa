"use client";

import type { TDescriptorMapping } from "@limitplane/enforcer/policy";
import { useRouter } from "next/navigation";
import { useState } from "react";
import { callApi } from "@/lib/api/api-client";
import formStyles from "../../policies/_components/policy-form.module.css";

type EntryField = "customer" | "tier" | "method" | "path" | "endpointClass" | "clientAddress";

const ENTRY_FIELDS: readonly { readonly field: EntryField; readonly label: string }[] = [
  { field: "customer", label: "Customer entry" },
  { field: "tier", label: "Tier entry" },
  { field: "method", label: "Method entry" },
  { field: "path", label: "Path entry" },
  { field: "endpointClass", label: "Endpoint class entry" },
  { field: "clientAddress", label: "Client address entry" },
];

/** A row as typed: entry keys as text, empty meaning not mapped. */
interface DraftRow {
  readonly id: number;
  readonly domain: string;
  readonly keys: Readonly<Record<EntryField, string>>;
  readonly limitOverride: "ignore" | "apply";
}

function draftOf(mapping: TDescriptorMapping, id: number): DraftRow {
  const keys = Object.fromEntries(
    ENTRY_FIELDS.map(({ field }) => [field, mapping[field] ?? ""]),
  ) as Record<EntryField, string>;
  return { id, domain: mapping.domain, keys, limitOverride: mapping.limitOverride };
}

function bodyOf(row: DraftRow) {
  const keys = Object.fromEntries(
    ENTRY_FIELDS.map(({ field }) => {
      const text = row.keys[field].trim();
      return [field, text === "" ? null : text];
    }),
  );
  return { domain: row.domain.trim(), ...keys, limitOverride: row.limitOverride };
}

const NEW_ROW_KEYS: Readonly<Record<EntryField, string>> = {
  customer: "customer_id",
  tier: "tier",
  method: "method",
  path: "path",
  endpointClass: "endpoint_class",
  clientAddress: "remote_address",
};

/** Edits every domain's mapping at once, as the API replaces them. */
export function DescriptorMappingsForm({
  initial,
  expectedVersion,
  isDefault,
}: {
  readonly initial: readonly TDescriptorMapping[];
  readonly expectedVersion: number;
  readonly isDefault: boolean;
}) {
  const router = useRouter();
  const [rows, setRows] = useState<readonly DraftRow[]>(() =>
    initial.map((mapping, index) => draftOf(mapping, index)),
  );
  const [nextId, setNextId] = useState(initial.length);
  const [reason, setReason] = useState("");
  const [fieldErrors, setFieldErrors] = useState<ReadonlyMap<string, string>>(new Map());
  const [formError, setFormError] = useState<string | null>(null);
  const [saved, setSaved] = useState<string | null>(null);
  const [isPending, setIsPending] = useState(false);
  // A save refreshes the page with the new version: the rows start again from what is now in
  // force, and the "Saved as" line stays. (Remounting the form by version lost that line as
  // soon as the refresh landed, before a slow reader, or a test, could see it.)
  const [shownVersion, setShownVersion] = useState(expectedVersion);
  if (shownVersion !== expectedVersion) {
    setShownVersion(expectedVersion);
    setRows(initial.map((mapping, index) => draftOf(mapping, index)));
    setNextId(initial.length);
    setReason("");
    setFieldErrors(new Map());
  }

  const update = (id: number, change: (row: DraftRow) => DraftRow) =>
    setRows((current) => current.map((row) => (row.id === id ? change(row) : row)));

  const send = async (descriptorMappings: unknown[] | null) => {
    setIsPending(true);
    setFormError(null);
    setFieldErrors(new Map());
    setSaved(null);
    try {
      const result = await callApi<{ policyVersion: number | null }>(
        "/api/v1/descriptor-mappings",
        {
          method: "PUT",
          body: { expectedVersion, descriptorMappings, reason: reason.trim() },
        },
      );
      if (result.ok) {
        setSaved(
          result.body.policyVersion === null
            ? "Saved; nothing the service sees changed."
            : `Saved as policy version ${result.body.policyVersion}.`,
        );
        router.refresh();
        return;
      }
      setFormError(result.error.message);
      setFieldErrors(new Map(result.error.fieldErrors.map((error) => [error.path, error.message])));
    } catch {
      setFormError("The change could not be sent. Check your connection and try again.");
    } finally {
      setIsPending(false);
    }
  };

  const errorAt = (index: number, field: string) =>
    fieldErrors.get(`descriptorMappings[${index}].${field}`);
  const listError = fieldErrors.get("descriptorMappings") ?? fieldErrors.get("reason");

  return (
    <form
      className={formStyles.form}
      noValidate
      aria-label="Descriptor mappings"
      onSubmit={(event) => {
        event.preventDefault();
        void send(rows.map(bodyOf));
      }}
    >
      {formError !== null ? (
        <div className={formStyles.formError} role="alert" data-testid="mappings-error">
          <p>{formError}</p>
          {listError !== undefined ? <p>{listError}</p> : null}
        </div>
      ) : null}
      {rows.length === 0 ? (
        <p className="small" data-testid="mappings-empty">
          No rows: saving maps no domain.
        </p>
      ) : null}
      {rows.map((row, index) => (
        <fieldset
          key={row.id}
          className={formStyles.limitFields}
          data-testid={`mapping-row-${index}`}
        >
          <legend>{row.domain === "" ? "New domain" : `Domain ${row.domain}`}</legend>
          <div className={formStyles.fieldRow}>
            <Field
              id={`mapping-${row.id}-domain`}
              label="Domain"
              value={row.domain}
              error={errorAt(index, "domain")}
              onChange={(domain) => update(row.id, (current) => ({ ...current, domain }))}
            />
            {ENTRY_FIELDS.map(({ field, label }) => (
              <Field
                key={field}
                id={`mapping-${row.id}-${field}`}
                label={label}
                value={row.keys[field]}
                error={errorAt(index, field)}
                onChange={(text) =>
                  update(row.id, (current) => ({
                    ...current,
                    keys: { ...current.keys, [field]: text },
                  }))
                }
              />
            ))}
            <div className={formStyles.field}>
              <label htmlFor={`mapping-${row.id}-override`}>A descriptor&apos;s own limit</label>
              <select
                id={`mapping-${row.id}-override`}
                value={row.limitOverride}
                onChange={(event) =>
                  update(row.id, (current) => ({
                    ...current,
                    limitOverride: event.target.value === "apply" ? "apply" : "ignore",
                  }))
                }
              >
                <option value="ignore">Ignore (the policy decides)</option>
                <option value="apply">Apply (replaces the policy&apos;s limit)</option>
              </select>
            </div>
          </div>
          <div className={formStyles.actions}>
            <button
              type="button"
              className="button secondary"
              onClick={() => setRows((current) => current.filter((item) => item.id !== row.id))}
            >
              Remove {row.domain === "" ? "this domain" : row.domain}
            </button>
          </div>
        </fieldset>
      ))}
      <div className={formStyles.actions}>
        <button
          type="button"
          className="button secondary"
          onClick={() => {
            setRows((current) => [
              ...current,
              { id: nextId, domain: "", keys: NEW_ROW_KEYS, limitOverride: "ignore" },
            ]);
            setNextId(nextId + 1);
          }}
        >
          Add a domain
        </button>
      </div>
      <div className={formStyles.field}>
        <label htmlFor="mappings-reason">Reason</label>
        <input
          id="mappings-reason"
          name="reason"
          value={reason}
          onChange={(event) => setReason(event.target.value)}
          maxLength={1000}
          aria-invalid={fieldErrors.has("reason")}
        />
        {fieldErrors.has("reason") ? (
          <span className={formStyles.fieldError}>{fieldErrors.get("reason")}</span>
        ) : null}
      </div>
      <div className={formStyles.actions}>
        <button type="submit" className="button" disabled={isPending} aria-busy={isPending}>
          Save the mappings
        </button>
        {isDefault ? null : (
          <button
            type="button"
            className="button secondary"
            disabled={isPending}
            onClick={() => void send(null)}
          >
            Reset to the default
          </button>
        )}
        {saved !== null ? (
          <output aria-live="polite" data-testid="mappings-saved">
            {saved}
          </output>
        ) : null}
      </div>
    </form>
  );
}

function Field(props: {
  readonly id: string;
  readonly label: string;
  readonly value: string;
  readonly error: string | undefined;
  readonly onChange: (value: string) => void;
}) {
  const errorId = `${props.id}-error`;
  return (
    <div className={formStyles.field}>
      <label htmlFor={props.id}>{props.label}</label>
      <input
        id={props.id}
        value={props.value}
        spellCheck={false}
        autoComplete="off"
        aria-invalid={props.error !== undefined}
        aria-describedby={props.error === undefined ? undefined : errorId}
        onChange={(event) => props.onChange(event.target.value)}
      />
      {props.error === undefined ? null : (
        <span id={errorId} className={formStyles.fieldError}>
          {props.error}
        </span>
      )}
    </div>
  );
}
