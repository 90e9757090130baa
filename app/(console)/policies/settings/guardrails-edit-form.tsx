"use client";

import type { TGuardrails } from "@limitplane/enforcer/policy";
import { useState } from "react";
import { Field } from "../_components/limit-fields";
import { type BuildResult, PolicyEditForm } from "../_components/policy-edit-form";
import styles from "../_components/policy-form.module.css";

const MINUTE_MS = 60_000;

/**
 * The incident guardrails (the largest factor and the longest duration an incident override may
 * have), edited with a preview. Tightening them below a current incident is refused, naming it.
 */
export function GuardrailsEditForm({
  version,
  guardrails,
}: {
  version: number;
  guardrails: TGuardrails;
}) {
  const [factorText, setFactorText] = useState(String(guardrails.maxIncidentFactor));
  const [minutesText, setMinutesText] = useState(
    String(guardrails.maxIncidentDurationMs / MINUTE_MS),
  );
  const build = (): BuildResult => {
    const errors: Record<string, string> = {};
    const factor = Number(factorText.trim());
    if (factorText.trim() === "" || !(factor > 1)) {
      errors["guardrails.maxIncidentFactor"] = "maxIncidentFactor must be a number more than 1";
    }
    const minutes = Number(minutesText.trim());
    if (minutesText.trim() === "" || !Number.isInteger(minutes) || minutes < 1) {
      errors["guardrails.maxIncidentDurationMs"] =
        "the longest duration must be a whole number of minutes, at least 1";
    }
    if (Object.keys(errors).length > 0) return { ok: false, errors };
    const change = {
      guardrails: { maxIncidentFactor: factor, maxIncidentDurationMs: minutes * MINUTE_MS },
    };
    return { ok: true, preview: { kind: "guardrails", ...change }, body: change };
  };
  return (
    <PolicyEditForm
      subject="the guardrails"
      version={version}
      saveUrl="/api/v1/settings"
      saveLabel="Save guardrails"
      previewLabel="Preview guardrails"
      reasonLabel="Reason for the guardrails change (required)"
      idPrefix="guardrails"
      build={build}
      renderFields={(errors) => (
        <div className={styles.fieldRow}>
          <Field
            id="guardrails-factor"
            label="Largest incident factor"
            error={errors["guardrails.maxIncidentFactor"]}
            help="An incident may multiply a limit by at most this (×10: ten times the limit)."
          >
            <input
              id="guardrails-factor"
              inputMode="decimal"
              value={factorText}
              onChange={(event) => setFactorText(event.target.value)}
            />
          </Field>
          <Field
            id="guardrails-minutes"
            label="Longest incident (minutes)"
            error={errors["guardrails.maxIncidentDurationMs"]}
            help="An incident override may last at most this long."
          >
            <input
              id="guardrails-minutes"
              inputMode="numeric"
              value={minutesText}
              onChange={(event) => setMinutesText(event.target.value)}
            />
          </Field>
        </div>
      )}
    />
  );
}
