"use client";

import { useEffect, useState } from "react";

/**
 * `from` and `to` typed in the operator's own time zone and sent as ISO instants, so a shared link
 * means the same moment to whoever opens it (each reader sees it in their own zone). The
 * `datetime-local` inputs carry no name; hidden inputs carry the instants. Before hydration the
 * inputs are empty and the hidden values are the URL's, so submitting early loses nothing.
 */
export function TimeRangeFields({
  from,
  to,
  className,
}: {
  from: string | undefined;
  to: string | undefined;
  className?: string;
}) {
  const [zone, setZone] = useState<string | null>(null);
  useEffect(() => {
    setZone(Intl.DateTimeFormat().resolvedOptions().timeZone);
  }, []);
  return (
    <>
      <InstantField
        name="from"
        label="From"
        hint="at or after"
        initial={from}
        zone={zone}
        className={className}
      />
      <InstantField
        name="to"
        label="To"
        hint="before"
        initial={to}
        zone={zone}
        className={className}
      />
    </>
  );
}

/** `YYYY-MM-DDTHH:mm` of an instant in the browser's zone, or "" for an unreadable one. */
function toLocalInputValue(iso: string | undefined): string {
  if (iso === undefined) return "";
  const atMs = Date.parse(iso);
  if (!Number.isFinite(atMs)) return "";
  const date = new Date(atMs);
  const pad = (value: number) => String(value).padStart(2, "0");
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}T${pad(
    date.getHours(),
  )}:${pad(date.getMinutes())}`;
}

function InstantField({
  name,
  label,
  hint,
  initial,
  zone,
  className,
}: {
  name: string;
  label: string;
  hint: string;
  initial: string | undefined;
  zone: string | null;
  className?: string;
}) {
  const [localValue, setLocalValue] = useState("");
  const [instant, setInstant] = useState(initial ?? "");
  useEffect(() => {
    setLocalValue(toLocalInputValue(initial));
    setInstant(initial ?? "");
  }, [initial]);
  const id = `audit-filter-${name}`;
  return (
    <div className={className}>
      <label htmlFor={id}>
        {label}{" "}
        <span className="muted small">
          ({hint}
          {zone ? `, ${zone}` : ""})
        </span>
      </label>
      <input
        id={id}
        type="datetime-local"
        value={localValue}
        onChange={(event) => {
          setLocalValue(event.target.value);
          // A local wall time without an offset is read in the browser's zone.
          const atMs = event.target.value === "" ? Number.NaN : Date.parse(event.target.value);
          setInstant(Number.isFinite(atMs) ? new Date(atMs).toISOString() : "");
        }}
      />
      <input
        type="hidden"
        name={name}
        value={instant}
        data-testid={`audit-filter-${name}-instant`}
      />
    </div>
  );
}
