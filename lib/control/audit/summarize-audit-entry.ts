/**
 * An audit entry as one line in the operator's words: who or what it concerns, and what changed
 * from what to what, with limits in rates and bursts and times in UTC:
 * `vandelay, all endpoints: 10/s, bursts of 20 → 30/s, bursts of 60 for 15 min (until 14:36 UTC)`.
 * The console shows it above the raw fields; webhook payloads carry it as `summary`. Pure: it reads
 * only the entry, leniently (before and after are JSON written by many versions of the services),
 * and falls back to naming the fields that changed.
 */
import { formatDurationMs, type TLimitSpec } from "@limitplane/enforcer/policy";
import { formatFactor, formatLimit, formatUtcClock } from "../format-words";

export interface SummarizableAuditEntry {
  readonly action: string;
  readonly entityType: string;
  readonly entityId: string;
  readonly customerId: string | null;
  readonly before: unknown;
  readonly after: unknown;
  /** When the change was made, ISO 8601: times on the same UTC day are said without the date. */
  readonly at?: string;
}

type Fields = Readonly<Record<string, unknown>>;

const ALGORITHMS = new Set([
  "token-bucket",
  "leaky-meter",
  "fixed-window",
  "sliding-log",
  "sliding-window",
]);

function fieldsOf(value: unknown): Fields | null {
  return typeof value === "object" && value !== null && !Array.isArray(value)
    ? (value as Fields)
    : null;
}

function text(fields: Fields | null, key: string): string | null {
  const value = fields?.[key];
  return typeof value === "string" ? value : null;
}

function num(fields: Fields | null, key: string): number | null {
  const value = fields?.[key];
  return typeof value === "number" && Number.isFinite(value) ? value : null;
}

function limitOf(value: unknown): TLimitSpec | null {
  const fields = fieldsOf(value);
  const algorithm = text(fields, "algorithm");
  if (fields === null || algorithm === null || !ALGORITHMS.has(algorithm)) return null;
  const isNumber = (key: string) => num(fields, key) !== null;
  const complete =
    algorithm === "token-bucket"
      ? isNumber("capacity") && isNumber("refillPerSec")
      : algorithm === "leaky-meter"
        ? isNumber("burst") && isNumber("drainPerSec")
        : isNumber("limit") && isNumber("windowMs");
  return complete ? (fields as unknown as TLimitSpec) : null;
}

function limitWords(value: unknown): string {
  const limit = limitOf(value);
  if (limit === null) return value === null || value === undefined ? "none" : "a limit";
  const mode = text(fieldsOf(value), "mode");
  return mode !== null && mode !== "enforce"
    ? `${formatLimit(limit)} (${mode})`
    : formatLimit(limit);
}

function isSame(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

function fromTo(before: string, after: string): string {
  return before === after ? after : `${before} → ${after}`;
}

/** `created`, `updated`, … from the action's verb. */
function verbWords(action: string): string {
  const verb = action.slice(action.lastIndexOf(".") + 1);
  const words: Record<string, string> = {
    create: "created",
    update: "changed",
    delete: "deleted",
    import: "imported",
    promote: "promoted",
    discard: "discarded",
    revoke: "revoked",
    disable: "disabled",
    enable: "enabled",
    "password-reset": "password reset",
    start: "started",
    pause: "paused",
    resume: "resumed",
    advance: "advanced",
    hold: "held",
    complete: "completed",
    abort: "aborted",
    revert: "reverted",
    approve: "approved",
    reject: "rejected",
    withdraw: "withdrawn",
    expire: "expired",
    refresh: "refreshed",
    raise: "raised",
    extend: "extended",
  };
  return words[verb] ?? verb;
}

/** The top-level fields whose values differ, in a stable order; bookkeeping fields left out. */
function changedFields(before: Fields | null, after: Fields | null): string[] {
  const ignored = new Set(["version", "updatedAt", "createdAt", "expectedVersion"]);
  const keys = new Set([...Object.keys(before ?? {}), ...Object.keys(after ?? {})]);
  return [...keys]
    .filter((key) => !ignored.has(key) && !isSame(before?.[key], after?.[key]))
    .sort();
}

function scopeWords(endpointClass: string | null): string {
  return endpointClass === null ? "all endpoints" : `endpoint class ${endpointClass}`;
}

function incidentSummary(entry: SummarizableAuditEntry, atMs: number): string {
  const before = fieldsOf(entry.before);
  const after = fieldsOf(entry.after);
  const current = after ?? before;
  const customer = entry.customerId ?? text(current, "customerId") ?? "a customer";
  const scope = scopeWords(text(current, "endpointClass"));
  const head = `${customer}, ${scope}`;
  const expiresAt = text(current, "expiresAt");
  const expiresMs = expiresAt === null ? Number.NaN : Date.parse(expiresAt);
  const until = Number.isFinite(expiresMs) ? formatUtcClock(expiresMs, atMs) : null;
  const effect = fieldsOf(current?.effect);
  // An ending incident puts the usual limit back: its numbers read the other way round.
  const isEnding = entry.action === "incident.revert" || entry.action === "incident.expire";
  const change =
    effect !== null && limitOf(effect.before) !== null && limitOf(effect.after) !== null
      ? isEnding
        ? `${limitWords(effect.after)} → ${limitWords(effect.before)}`
        : `${limitWords(effect.before)} → ${limitWords(effect.after)}`
      : num(current, "factor") !== null
        ? `limit ${formatFactor(num(current, "factor") ?? 1)}`
        : limitOf(current?.limit) !== null
          ? `limit set to ${limitWords(current?.limit)}`
          : "limit changed";
  switch (entry.action) {
    case "incident.raise": {
      const startsMs = Date.parse(text(after, "startsAt") ?? "");
      const span =
        Number.isFinite(startsMs) && Number.isFinite(expiresMs)
          ? ` for ${formatDurationMs(expiresMs - startsMs)}`
          : "";
      return `${head}: ${change}${span}${until === null ? "" : ` (until ${until})`}`;
    }
    case "incident.extend": {
      const oldExpires = Date.parse(text(before, "expiresAt") ?? "");
      const from = Number.isFinite(oldExpires) ? `${formatUtcClock(oldExpires, atMs)} → ` : "";
      return `${head}: ${change} extended, until ${from}${until ?? "a later time"}`;
    }
    case "incident.revert":
      return `${head}: ${change} reverted before its end${until === null ? "" : ` (${until})`}; the usual limit applies again`;
    case "incident.expire":
      return `${head}: ${change} ended${until === null ? "" : ` at ${until}`}; the usual limit applies again`;
    default:
      return `${head}: incident ${verbWords(entry.action)}`;
  }
}

function overrideSummary(entry: SummarizableAuditEntry): string {
  const before = fieldsOf(entry.before);
  const after = fieldsOf(entry.after);
  const current = after ?? before;
  const customer = entry.customerId ?? text(current, "customerId") ?? "a customer";
  const head = `${customer}, ${scopeWords(text(current, "endpointClass"))}`;
  if (entry.action === "override.create")
    return `${head}: override set to ${limitWords(after?.limit)}`;
  if (entry.action === "override.delete") {
    return `${head}: override of ${limitWords(before?.limit)} removed; the tier's limit applies`;
  }
  return `${head}: override ${fromTo(limitWords(before?.limit), limitWords(after?.limit))}`;
}

function tierSummary(entry: SummarizableAuditEntry): string {
  const before = fieldsOf(entry.before);
  const after = fieldsOf(entry.after);
  const head = `tier ${entry.entityId}`;
  if (entry.action === "tier.create") return `${head} created: ${limitWords(after?.limit)}`;
  if (entry.action === "tier.delete") return `${head} deleted (was ${limitWords(before?.limit)})`;
  const parts: string[] = [];
  if (!isSame(before?.limit, after?.limit)) {
    parts.push(fromTo(limitWords(before?.limit), limitWords(after?.limit)));
  }
  const others = changedFields(before, after).filter((key) => key !== "limit");
  if (others.length > 0) parts.push(`${others.join(", ")} changed`);
  return `${head}: ${parts.length === 0 ? "nothing changed" : parts.join("; ")}`;
}

function endpointClassSummary(entry: SummarizableAuditEntry): string {
  const before = fieldsOf(entry.before);
  const after = fieldsOf(entry.after);
  const head = `endpoint class ${entry.entityId}`;
  if (entry.action === "endpoint-class.create") return `${head} created`;
  if (entry.action === "endpoint-class.delete") return `${head} deleted`;
  const parts: string[] = [];
  const oldLimits = fieldsOf(before?.limits) ?? {};
  const newLimits = fieldsOf(after?.limits) ?? {};
  for (const tier of [...new Set([...Object.keys(oldLimits), ...Object.keys(newLimits)])].sort()) {
    if (!isSame(oldLimits[tier], newLimits[tier])) {
      parts.push(`${tier} ${fromTo(limitWords(oldLimits[tier]), limitWords(newLimits[tier]))}`);
    }
  }
  for (const key of ["ceiling", "anonymousLimit"] as const) {
    if (!isSame(before?.[key], after?.[key])) {
      const name = key === "ceiling" ? "ceiling" : "anonymous limit";
      parts.push(`${name} ${fromTo(limitWords(before?.[key]), limitWords(after?.[key]))}`);
    }
  }
  const cost = [num(before, "cost"), num(after, "cost")];
  if (cost[0] !== cost[1]) parts.push(`cost ${cost[0] ?? "none"} → ${cost[1] ?? "none"}`);
  const described = new Set(["limits", "ceiling", "anonymousLimit", "cost"]);
  const others = changedFields(before, after).filter((key) => !described.has(key));
  if (others.length > 0) parts.push(`${others.join(", ")} changed`);
  return `${head}: ${parts.length === 0 ? "nothing changed" : parts.join("; ")}`;
}

function customerSummary(entry: SummarizableAuditEntry): string {
  const before = fieldsOf(entry.before);
  const after = fieldsOf(entry.after);
  const head = `customer ${entry.customerId ?? entry.entityId}`;
  if (entry.action === "customer.create") {
    return `${head} registered in tier ${text(after, "tier") ?? "unknown"}`;
  }
  if (entry.action === "customer.delete") return `${head} removed from the registry`;
  const parts: string[] = [];
  const tiers = [text(before, "tier"), text(after, "tier")];
  if (tiers[0] !== tiers[1]) parts.push(`tier ${tiers[0] ?? "none"} → ${tiers[1] ?? "none"}`);
  const others = changedFields(before, after).filter((key) => key !== "tier");
  if (others.length > 0) parts.push(`${others.join(", ")} changed`);
  return `${head}: ${parts.length === 0 ? "nothing changed" : parts.join("; ")}`;
}

function auditWebhookSummary(entry: SummarizableAuditEntry): string {
  const before = text(fieldsOf(entry.before), "url");
  const after = fieldsOf(entry.after);
  const url = text(after, "url");
  const secret = after?.isSigningSecretNew === true ? "; new signing secret" : "";
  if (url === null) return `audit webhook turned off${before === null ? "" : ` (was ${before})`}`;
  if (before === null) return `audit webhook set to ${url}${secret}`;
  return `audit webhook ${before === url ? `kept at ${url}` : fromTo(before, url)}${secret}`;
}

function genericSummary(entry: SummarizableAuditEntry): string {
  const before = fieldsOf(entry.before);
  const after = fieldsOf(entry.after);
  const head = `${entry.entityType} ${entry.entityId} ${verbWords(entry.action)}`;
  const status = [text(before, "status"), text(after, "status")];
  if (status[0] !== null && status[1] !== null && status[0] !== status[1]) {
    return `${head}: ${status[0]} → ${status[1]}`;
  }
  if (before === null || after === null) return head;
  const changed = changedFields(before, after);
  if (changed.length === 0) return head;
  const shown = changed.slice(0, 4);
  const more = changed.length > shown.length ? ` and ${changed.length - shown.length} more` : "";
  return `${head}: ${shown.join(", ")}${more} changed`;
}

export function summarizeAuditEntry(entry: SummarizableAuditEntry): string {
  const atMs = entry.at === undefined ? Number.NaN : Date.parse(entry.at);
  switch (entry.entityType) {
    case "incident":
      return incidentSummary(entry, atMs);
    case "customer-override":
      return overrideSummary(entry);
    case "tier":
      return tierSummary(entry);
    case "endpoint-class":
      return endpointClassSummary(entry);
    case "customer":
      return customerSummary(entry);
    case "audit-webhook":
      return auditWebhookSummary(entry);
    default:
      return genericSummary(entry);
  }
}
