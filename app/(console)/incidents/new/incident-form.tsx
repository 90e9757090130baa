"use client";

import type { LimitSpec } from "@limitplane/enforcer/limiter";
import { formatDuration, scaleLimit } from "@limitplane/enforcer/policy";
import Link from "next/link";
import { useRouter } from "next/navigation";
import { useEffect, useId, useMemo, useState } from "react";
import { BacktestPanel } from "@/components/backtest/backtest-panel";
import type { IncidentScopeOption } from "@/components/ops/incident-scopes";
import styles from "@/components/ops/ops.module.css";
import { ConfirmDialog, type ConfirmResult } from "@/components/ui/confirm-dialog";
import { callApi } from "@/lib/api/api-client";
// Direct module imports: this is client code.
import { formatClockTime, formatDurationMs, formatLimit } from "@/lib/console/format";
import { MAX_REASON_LENGTH } from "@/lib/control/change-context";
import {
  blockedMessage,
  checkIncidentDraft,
  type IncidentField as Field,
  groupByField,
  type IncidentDraft,
  type IncidentFieldErrors,
  raiseBodyOf,
} from "./incident-form-check";

export interface IncidentFormProps {
  readonly customer: { readonly id: string; readonly displayName: string; readonly tier: string };
  /**
   * Set for a customer only the gateways report: raising registers it with this tier (the
   * reported one when the policy has it, else the default), said in the confirm step.
   */
  readonly registersWithTier?: string;
  readonly scopes: readonly IncidentScopeOption[];
  readonly defaultScope: string;
  readonly guardrails: {
    readonly maxIncidentFactor: number;
    readonly maxIncidentDurationMs: number;
  };
}

const MINUTE_MS = 60_000;
/** The raise's backtest looks at the last hour: what an incident is about. */
const BACKTEST_WINDOW_MS = 60 * MINUTE_MS;
const PRESETS = [
  { value: "15", label: "15 min", durationMs: 15 * MINUTE_MS },
  { value: "60", label: "1 h", durationMs: 60 * MINUTE_MS },
  { value: "240", label: "4 h", durationMs: 240 * MINUTE_MS },
] as const;

type FieldErrors = IncidentFieldErrors;

/** The size (capacity, burst or count) and sustained rate fields of a limit, for editing. */
function limitParts(spec: LimitSpec): { size: number; rate: number | null } {
  switch (spec.algorithm) {
    case "token-bucket":
      return { size: spec.capacity, rate: spec.refillPerSec };
    case "leaky-meter":
      return { size: spec.burst, rate: spec.drainPerSec };
    default:
      return { size: spec.limit, rate: null };
  }
}

function withParts(spec: LimitSpec, size: number, rate: number | null): LimitSpec {
  switch (spec.algorithm) {
    case "token-bucket":
      return { ...spec, capacity: size, refillPerSec: rate ?? spec.refillPerSec };
    case "leaky-meter":
      return { ...spec, burst: size, drainPerSec: rate ?? spec.drainPerSec };
    default:
      return { ...spec, limit: size };
  }
}

const SIZE_LABEL: Record<LimitSpec["algorithm"], string> = {
  "token-bucket": "Burst (capacity)",
  "leaky-meter": "Burst",
  "fixed-window": "Requests per window",
  "sliding-log": "Requests per window",
  "sliding-window": "Requests per window",
};

/**
 * Raise (or cut) one customer's limit for a while. The draft is checked with the domain's own
 * rules (`checkIncidentDraft`: the service's schemas and guardrails), at the field; the server
 * checks it again with what is stored now, and its refusal is shown at the same field.
 */
export function IncidentForm({
  customer,
  registersWithTier,
  scopes,
  defaultScope,
  guardrails,
}: IncidentFormProps) {
  const router = useRouter();
  const formId = useId();
  const [scopeValue, setScopeValue] = useState(defaultScope);
  const scope = scopes.find((option) => option.value === scopeValue) ?? scopes[0];
  const [mode, setMode] = useState<"factor" | "limit">(scope?.base ? "factor" : "limit");
  const [factorText, setFactorText] = useState("3");
  const template = scope?.base ?? scope?.current ?? null;
  const [sizeText, setSizeText] = useState(() =>
    template === null ? "" : String(limitParts(template).size * 3),
  );
  const [rateText, setRateText] = useState(() => {
    const rate = template === null ? null : limitParts(template).rate;
    return rate === null ? "" : String(rate * 3);
  });
  const [preset, setPreset] = useState<string>("15");
  const [customMinutesText, setCustomMinutesText] = useState("30");
  const [reason, setReason] = useState("");
  // The reason is asked for once the operator has been in the field, not before they start.
  const [isReasonTouched, setIsReasonTouched] = useState(false);
  const [ticketUrl, setTicketUrl] = useState("");
  const [serverErrors, setServerErrors] = useState<FieldErrors>({});
  const [nowMs, setNowMs] = useState<number | null>(null);

  useEffect(() => {
    setNowMs(Date.now());
    const timer = setInterval(() => setNowMs(Date.now()), 15_000);
    return () => clearInterval(timer);
  }, []);

  const chooseScope = (value: string) => {
    setScopeValue(value);
    setServerErrors({});
    const next = scopes.find((option) => option.value === value);
    const nextTemplate = next?.base ?? next?.current ?? null;
    if (next?.base === null) setMode("limit");
    if (nextTemplate !== null) {
      const parts = limitParts(nextTemplate);
      setSizeText(String(parts.size * 3));
      setRateText(parts.rate === null ? "" : String(parts.rate * 3));
    }
  };

  const durationMs =
    preset === "custom"
      ? Math.round(Number(customMinutesText) * MINUTE_MS)
      : (PRESETS.find((p) => p.value === preset)?.durationMs ?? 15 * MINUTE_MS);

  const after: LimitSpec | null = useMemo(() => {
    if (scope === undefined) return null;
    if (mode === "factor") {
      const factor = Number(factorText);
      if (scope.base === null || !(factor > 0)) return null;
      return scaleLimit(scope.base, factor);
    }
    if (template === null) return null;
    const size = Number(sizeText);
    const rate = limitParts(template).rate === null ? null : Number(rateText);
    if (!(size > 0) || (rate !== null && !(rate > 0))) return null;
    return withParts(template, size, rate);
  }, [scope, mode, factorText, sizeText, rateText, template]);

  const draftLimit =
    template === null
      ? null
      : withParts(
          template,
          Number(sizeText),
          limitParts(template).rate === null ? null : Number(rateText),
        );
  const draft: IncidentDraft = {
    customerId: customer.id,
    endpointClass: scope?.endpointClass ?? null,
    mode,
    factor: Number(factorText),
    limit: draftLimit,
    durationMs,
    reason,
    ticketUrl,
  };
  // The domain's rules, as the service applies them; the server decides with what is stored now.
  const hints: FieldErrors = checkIncidentDraft(draft, {
    guardrails,
    replacedLimit: scope?.base ?? null,
    nowMs: nowMs ?? Date.now(),
  });
  const maxFactor = guardrails.maxIncidentFactor;
  if (scope === undefined) hints.scope = "Choose what to raise.";
  else if (scope.activeIncidentId !== null) {
    hints.scope = `An incident override is already active here (${scope.activeIncidentId}): extend or revert it instead.`;
  }
  if (mode === "limit" && template === null) hints.limit = "There is no limit here to start from.";
  if (reason.trim() === "") hints.reason = "Say why: it goes on the incident and in the audit log.";
  // A refusal belongs to what was sent: editing anything clears it until the next attempt.
  const edit =
    <Value,>(setter: (value: Value) => void) =>
    (value: Value) => {
      setServerErrors({});
      setter(value);
    };
  const errorOf = (field: Field) =>
    serverErrors[field] ?? (field === "reason" && !isReasonTouched ? undefined : hints[field]);
  const isValid = Object.keys(hints).length === 0;
  const blocked = blockedMessage(hints, (field) => errorOf(field) !== undefined);

  const scopeWords = scope?.endpointClass ?? "all endpoints";
  const beforeWords = scope?.current ? formatLimit(scope.current) : "no limit";
  const afterWords = after ? formatLimit(after) : "—";
  const untilWords = nowMs === null ? "" : `, until ${formatClockTime(nowMs + durationMs)}`;
  const summary = `${customer.id}: ${scopeWords} ${beforeWords} → ${afterWords} for ${formatDurationMs(durationMs)}${untilWords}`;

  const submit = async (): Promise<ConfirmResult> => {
    setServerErrors({});
    const body = raiseBodyOf(draft);
    let answer: Awaited<ReturnType<typeof callApi>>;
    try {
      answer = await callApi("/api/v1/incidents", { method: "POST", body });
    } catch {
      return { error: "The console did not answer. Check your connection; nothing was changed." };
    }
    if (answer.ok) {
      const id = readIncidentId(answer.body);
      router.push(id === null ? "/overrides" : `/incidents/${encodeURIComponent(id)}`);
      return;
    }
    const { message, fieldErrors } = answer.error;
    setServerErrors(groupByField(fieldErrors));
    return { error: message };
  };

  if (scope === undefined) {
    return <p className="muted">The policy has no layer to raise for this customer.</p>;
  }

  return (
    <form
      id={formId}
      className="panel"
      onSubmit={(event) => event.preventDefault()}
      aria-label="Raise limit"
      noValidate
    >
      <div className={styles.formGrid}>
        <FieldBox id={`${formId}-scope`} label="Scope" error={errorOf("scope")}>
          <select
            id={`${formId}-scope`}
            value={scope.value}
            onChange={(event) => chooseScope(event.target.value)}
          >
            {scopes.map((option) => (
              <option key={option.value} value={option.value}>
                {option.label}
              </option>
            ))}
          </select>
          <p className={styles.hint}>
            Now: {scope.current ? formatLimit(scope.current) : "no limit on this layer"}
          </p>
          {scope.activeIncidentId !== null ? (
            <p className={styles.hint}>
              <Link href={`/incidents/${encodeURIComponent(scope.activeIncidentId)}`}>
                Open {scope.activeIncidentId} to extend or revert it
              </Link>
            </p>
          ) : null}
        </FieldBox>

        <div>
          <fieldset className={styles.choices}>
            <legend className={styles.legend}>Change</legend>
            <label>
              <input
                type="radio"
                name="mode"
                value="factor"
                checked={mode === "factor"}
                onChange={() => edit(setMode)("factor")}
                disabled={scope.base === null}
              />
              Multiplier
            </label>
            <label>
              <input
                type="radio"
                name="mode"
                value="limit"
                checked={mode === "limit"}
                onChange={() => edit(setMode)("limit")}
              />
              Absolute limit
            </label>
          </fieldset>
          {mode === "factor" ? (
            <FieldBox
              id={`${formId}-factor`}
              label="Multiply by"
              error={errorOf("factor")}
              hint={`×${1 / maxFactor} to ×${maxFactor} (guardrail)`}
            >
              <input
                id={`${formId}-factor`}
                inputMode="decimal"
                value={factorText}
                onChange={(event) => edit(setFactorText)(event.target.value)}
              />
            </FieldBox>
          ) : template !== null ? (
            <FieldBox
              id={`${formId}-size`}
              label={SIZE_LABEL[template.algorithm]}
              error={errorOf("limit")}
            >
              <input
                id={`${formId}-size`}
                inputMode="numeric"
                value={sizeText}
                onChange={(event) => edit(setSizeText)(event.target.value)}
              />
              {limitParts(template).rate !== null ? (
                <>
                  <label htmlFor={`${formId}-rate`}>Sustained rate (per second)</label>
                  <input
                    id={`${formId}-rate`}
                    inputMode="decimal"
                    value={rateText}
                    onChange={(event) => edit(setRateText)(event.target.value)}
                  />
                </>
              ) : null}
            </FieldBox>
          ) : (
            <p className={styles.fieldError}>{errorOf("limit")}</p>
          )}
        </div>

        <div>
          <fieldset className={styles.choices}>
            <legend className={styles.legend}>Duration</legend>
            {PRESETS.map((option) => (
              <label key={option.value}>
                <input
                  type="radio"
                  name="duration"
                  value={option.value}
                  checked={preset === option.value}
                  onChange={() => edit(setPreset)(option.value)}
                />
                {option.label}
              </label>
            ))}
            <label>
              <input
                type="radio"
                name="duration"
                value="custom"
                checked={preset === "custom"}
                onChange={() => edit(setPreset)("custom")}
              />
              Custom
            </label>
          </fieldset>
          {preset === "custom" ? (
            <FieldBox
              id={`${formId}-minutes`}
              label="Minutes"
              error={errorOf("duration")}
              hint={`At most ${formatDuration(guardrails.maxIncidentDurationMs)} (guardrail)`}
            >
              <input
                id={`${formId}-minutes`}
                inputMode="numeric"
                value={customMinutesText}
                onChange={(event) => edit(setCustomMinutesText)(event.target.value)}
              />
            </FieldBox>
          ) : errorOf("duration") ? (
            <p className={styles.fieldError} role="alert">
              {errorOf("duration")}
            </p>
          ) : null}
        </div>
      </div>

      <FieldBox id={`${formId}-reason`} label="Reason (required)" error={errorOf("reason")}>
        <textarea
          id={`${formId}-reason`}
          value={reason}
          maxLength={MAX_REASON_LENGTH}
          onChange={(event) => edit(setReason)(event.target.value)}
          onBlur={() => setIsReasonTouched(true)}
          placeholder="What is happening and who approved it"
        />
      </FieldBox>
      <FieldBox id={`${formId}-ticket`} label="Ticket link (optional)" error={errorOf("ticketUrl")}>
        <input
          id={`${formId}-ticket`}
          type="url"
          value={ticketUrl}
          onChange={(event) => edit(setTicketUrl)(event.target.value)}
          placeholder="https://tickets.example.com/INC-123"
        />
      </FieldBox>

      <p className={styles.summary} data-testid="incident-summary">
        {summary}
      </p>
      <BacktestPanel
        draft={
          after === null || hints.factor !== undefined || hints.limit !== undefined
            ? null
            : {
                kind: "incident",
                customerId: customer.id,
                endpointClass: scope.endpointClass,
                factor: mode === "factor" ? Number(factorText) : null,
                limit: mode === "limit" ? draftLimit : null,
              }
        }
        unavailable="Fix the change fields to run a backtest."
        windowMs={BACKTEST_WINDOW_MS}
        title="Backtest: the last hour of this customer's recorded traffic with the raise"
        headingLevel={2}
      />
      {errorOf("form") ? (
        <p className={styles.fieldError} role="alert">
          {errorOf("form")}
        </p>
      ) : null}
      <ConfirmDialog
        triggerLabel="Review and raise"
        title={`Raise ${customer.displayName}'s limit?`}
        confirmLabel="Raise limit"
        disabled={!isValid}
        onConfirm={submit}
      >
        <p className={styles.summary}>{summary}</p>
        {registersWithTier !== undefined ? (
          <p className="small" data-testid="registers-customer">
            {customer.id} is not in the registry: raising also registers it, with tier{" "}
            <strong>{registersWithTier}</strong>, as its own audit entry.
          </p>
        ) : null}
        <p className="small">
          Enforcers apply it within seconds; it ends by itself at expiry. The reason is recorded in
          the audit log under your name.
        </p>
      </ConfirmDialog>
      {blocked !== null ? (
        <p className="muted small" data-testid="incident-blocked">
          {blocked}
        </p>
      ) : null}
    </form>
  );
}

function FieldBox({
  id,
  label,
  error,
  hint,
  children,
}: {
  id: string;
  label: string;
  error: string | undefined;
  hint?: string;
  children: React.ReactNode;
}) {
  return (
    <div className={styles.field} data-invalid={error !== undefined}>
      <label htmlFor={id}>{label}</label>
      {children}
      {hint !== undefined ? <p className={styles.hint}>{hint}</p> : null}
      {error !== undefined ? (
        <p className={styles.fieldError} role="alert" data-testid="field-error">
          {error}
        </p>
      ) : null}
    </div>
  );
}

function readIncidentId(payload: unknown): string | null {
  if (typeof payload !== "object" || payload === null || !("incident" in payload)) return null;
  const incident = payload.incident;
  if (typeof incident !== "object" || incident === null || !("id" in incident)) return null;
  return typeof incident.id === "string" ? incident.id : null;
}
