/**
 * The incident form's checks: the request it sends, and what the domain says about it
 * (`checkRaiseIncident`: the same schemas and guardrails the service applies), grouped by the
 * form field each problem belongs to. Pure, so a unit test holds it against the service's rules.
 */
import type { LimitSpec } from "@limitplane/enforcer/limiter";
// Direct module imports: this is client code, and these modules are pure.
import {
  checkRaiseIncident,
  type RaiseCheckContext,
} from "@/lib/control/incident/raise-incident-options";

export type IncidentField =
  | "scope"
  | "factor"
  | "limit"
  | "duration"
  | "reason"
  | "ticketUrl"
  | "form";
export type IncidentFieldErrors = Partial<Record<IncidentField, string>>;

/** What the operator entered, as values. */
export interface IncidentDraft {
  readonly customerId: string;
  /** null: the account layer (all endpoints). */
  readonly endpointClass: string | null;
  /** `factor`: `factor` is sent; `limit`: `limit` is sent. */
  readonly mode: "factor" | "limit";
  readonly factor: number;
  /** The absolute limit the fields make, or null when there is none to start from. */
  readonly limit: LimitSpec | null;
  readonly durationMs: number;
  readonly reason: string;
  readonly ticketUrl: string;
}

/** The POST /api/v1/incidents body the draft makes. */
export function raiseBodyOf(draft: IncidentDraft): Record<string, unknown> {
  const ticketUrl = draft.ticketUrl.trim();
  return {
    customerId: draft.customerId,
    endpointClass: draft.endpointClass,
    ...(draft.mode === "factor" ? { factor: draft.factor } : { limit: draft.limit }),
    durationMs: draft.durationMs,
    reason: draft.reason.trim(),
    ...(ticketUrl === "" ? {} : { ticketUrl }),
  };
}

/** The API's field path, as the form field it belongs to. */
export function fieldOf(path: string): IncidentField {
  if (path === "factor") return "factor";
  if (path.startsWith("limit")) return "limit";
  if (path === "expiresAt" || path === "durationMs" || path === "startsAt") return "duration";
  if (path === "reason") return "reason";
  if (path === "ticketUrl") return "ticketUrl";
  if (path === "endpointClass") return "scope";
  return "form";
}

/** Field errors (the API's `{path, message}`), joined per form field. */
export function groupByField(
  errors: readonly { readonly path: string; readonly message: string }[],
): IncidentFieldErrors {
  const grouped: IncidentFieldErrors = {};
  for (const error of errors) {
    const field = fieldOf(error.path);
    grouped[field] = grouped[field] ? `${grouped[field]}; ${error.message}` : error.message;
  }
  return grouped;
}

/** Every problem the service would find in the draft without its database, per form field. */
export function checkIncidentDraft(
  draft: IncidentDraft,
  context: RaiseCheckContext,
): IncidentFieldErrors {
  const { reason, ...options } = raiseBodyOf(draft);
  return groupByField(checkRaiseIncident(options, reason, context));
}

/** The fields as the form lays them out. */
const FIELDS_IN_FORM_ORDER: readonly IncidentField[] = [
  "scope",
  "factor",
  "limit",
  "duration",
  "reason",
  "ticketUrl",
  "form",
];

const FIELD_WORDS: Readonly<Record<IncidentField, string>> = {
  scope: "Scope",
  factor: "Multiply by",
  limit: "the limit",
  duration: "Duration",
  reason: "Reason",
  ticketUrl: "Ticket link",
  form: "the form",
};

/**
 * What the form says beside its disabled submit button, or null when it can be sent. "Fix the
 * fields marked" only when one is marked; otherwise it names what is still missing (the reason is
 * not marked before the operator has been in it, so an untouched form says "Fill in Reason").
 */
export function blockedMessage(
  hints: IncidentFieldErrors,
  isMarked: (field: IncidentField) => boolean,
): string | null {
  const blocking = FIELDS_IN_FORM_ORDER.filter((field) => hints[field] !== undefined);
  if (blocking.length === 0) return null;
  if (blocking.some(isMarked)) return "Fix the fields marked above to continue.";
  return `Fill in ${blocking.map((field) => FIELD_WORDS[field]).join(" and ")} to continue.`;
}
