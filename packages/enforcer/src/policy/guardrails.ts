/**
 * Guardrails on incident overrides: how far one may raise or cut a limit, and for how long. They
 * are write-time rules for the control plane (a service calls {@link checkIncidentGuardrails} when
 * an operator raises, extends or edits an incident; the policy document schema calls it for every
 * incident it holds). Enforcers never check them: they apply what was published.
 */
import type { LimitSpec } from "../limiter/types";
import type { PolicyFieldError } from "./errors";
import { formatDuration, formatQuantity } from "./format";
import { limitRateField, limitRatePerSec, limitSize, limitSizeField } from "./limit-math";

/** The configurable bounds, as they appear in a policy's `guardrails`. */
export interface GuardrailSettings {
  /**
   * An incident may multiply a limit by at most this, or divide it by at most this
   * (a factor of 10 allows factors from 0.1 to 10). Must be more than 1.
   * @default 10
   */
  readonly maxIncidentFactor: number;
  /**
   * Longest time from an incident's `startsAt` to its `expiresAt`.
   * @default 86_400_000 (24 h)
   */
  readonly maxIncidentDurationMs: number;
}

export const DEFAULT_GUARDRAILS: GuardrailSettings = {
  maxIncidentFactor: 10,
  maxIncidentDurationMs: 24 * 60 * 60 * 1000,
};

/** What the guardrails look at in an incident override. */
export interface IncidentChange {
  /** Multiplies the limit the incident replaces; null when `limit` is given. */
  readonly factor: number | null;
  /** An absolute limit replacing it; null when `factor` is given. */
  readonly limit: LimitSpec | null;
  /** ISO 8601 instant. */
  readonly startsAt: string;
  /** ISO 8601 instant. */
  readonly expiresAt: string;
}

/** Options of {@link checkIncidentGuardrails}. */
export interface IncidentGuardrailOptions {
  readonly guardrails: GuardrailSettings;
  /**
   * The enforced limit the incident replaces for its customer and scope (the customer's override,
   * or else the tier's limit), or null when there is none. A factor needs one to scale; an
   * absolute limit is compared with it. See `findReplacedLimit`.
   */
  readonly replacedLimit: LimitSpec | null;
  /**
   * The current wall-clock time, when checking a change being made now: an expiry that is already
   * past is then refused. Omit it to check a stored policy, where past incidents are history.
   */
  readonly nowMs?: number;
}

/**
 * Every guardrail the incident breaks, each naming the field (relative to the incident: `factor`,
 * `expiresAt`, `limit.capacity`...) and the maximum it exceeds. An empty array means it passes.
 */
export function checkIncidentGuardrails(
  incident: IncidentChange,
  options: IncidentGuardrailOptions,
): PolicyFieldError[] {
  const errors: PolicyFieldError[] = [];
  const { maxIncidentFactor, maxIncidentDurationMs } = options.guardrails;

  const startsAtMs = Date.parse(incident.startsAt);
  const expiresAtMs = Date.parse(incident.expiresAt);
  if (!(expiresAtMs > startsAtMs)) {
    errors.push({ path: ["expiresAt"], message: "expiresAt must be after startsAt" });
  } else if (expiresAtMs - startsAtMs > maxIncidentDurationMs) {
    errors.push({
      path: ["expiresAt"],
      message: `the override would last ${formatDuration(expiresAtMs - startsAtMs)}; the maximum is ${formatDuration(maxIncidentDurationMs)} (guardrails.maxIncidentDurationMs)`,
    });
  }
  if (options.nowMs !== undefined && expiresAtMs <= options.nowMs) {
    errors.push({
      path: ["expiresAt"],
      message: "expiresAt is already past; choose a future instant",
    });
  }

  const replaced = options.replacedLimit;
  if (incident.factor !== null) {
    if (replaced === null) {
      errors.push({
        path: ["factor"],
        message:
          "there is no enforced limit here for a factor to scale; give an absolute limit instead",
      });
    } else {
      const problem = describeRatio(incident.factor, maxIncidentFactor);
      if (problem !== null)
        errors.push({ path: ["factor"], message: `factor ${incident.factor} ${problem}` });
    }
  }
  if (incident.limit !== null && replaced !== null) {
    const next = incident.limit;
    const sizeField = limitSizeField(next);
    const sizeProblem = describeRatio(limitSize(next) / limitSize(replaced), maxIncidentFactor);
    if (sizeProblem !== null) {
      errors.push({
        path: ["limit", sizeField],
        message: `${sizeField} ${limitSize(next)} against ${limitSize(replaced)} in the limit it replaces ${sizeProblem}`,
      });
    }
    const rateProblem = describeRatio(
      limitRatePerSec(next) / limitRatePerSec(replaced),
      maxIncidentFactor,
    );
    if (rateProblem !== null) {
      errors.push({
        path: ["limit", limitRateField(next)],
        message: `a sustained rate of ${formatQuantity(limitRatePerSec(next))}/s against ${formatQuantity(limitRatePerSec(replaced))}/s in the limit it replaces ${rateProblem}`,
      });
    }
  }
  return errors;
}

/**
 * The guardrail on a count an incident-like raise replaces (an outbound budget's concurrency cap):
 * `next` within `maxIncidentFactor` of `replaced`, either way. Null when it passes; else the
 * error at `field`.
 */
export function checkCountGuardrail(
  field: string,
  next: number,
  replaced: number,
  guardrails: GuardrailSettings,
): PolicyFieldError | null {
  const problem = describeRatio(next / replaced, guardrails.maxIncidentFactor);
  return problem === null
    ? null
    : {
        path: [field],
        message: `${field} ${next} against ${replaced} in the cap it replaces ${problem}`,
      };
}

/** Null when `ratio` is within the guardrail, else what it does and what the bound is. */
function describeRatio(ratio: number, maxFactor: number): string | null {
  const tolerance = 1e-9;
  if (ratio > maxFactor + tolerance) {
    return `would raise the limit ${formatQuantity(ratio)}x; the maximum raise is ${formatQuantity(maxFactor)}x (guardrails.maxIncidentFactor)`;
  }
  if (ratio < 1 / maxFactor - tolerance) {
    return `would cut the limit to 1/${formatQuantity(1 / ratio)}; the deepest cut is to 1/${formatQuantity(maxFactor)}, a factor of ${formatQuantity(1 / maxFactor)} (guardrails.maxIncidentFactor)`;
  }
  return null;
}
