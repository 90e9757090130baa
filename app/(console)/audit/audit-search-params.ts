/**
 * The audit page's URL: filters and paging as search parameters, so a filtered view is a link
 * anyone with audit access can open. Values are passed to `listAuditEntries`, which validates
 * them; here they are only picked out of the URL (one value each, empty meaning unset).
 */
import type { SearchParamsRecord } from "@/lib/console";

/** Filter parameters, in the order the form shows them and links keep them. */
export const AUDIT_FILTER_PARAMS = [
  "actorId",
  "actorType",
  "action",
  "entityType",
  "entityId",
  "customerId",
  "from",
  "to",
] as const;
export type AuditFilterParam = (typeof AUDIT_FILTER_PARAMS)[number];

export type AuditFilters = Partial<Record<AuditFilterParam, string>>;

/** One value of a parameter: the first when repeated; `undefined` when absent or empty. */
export function firstParam(params: SearchParamsRecord, name: string): string | undefined {
  const raw = params[name];
  const value = typeof raw === "string" ? raw : raw?.[0];
  return value === undefined || value.trim() === "" ? undefined : value.trim();
}

export function readAuditFilters(params: SearchParamsRecord): AuditFilters {
  const filters: AuditFilters = {};
  for (const name of AUDIT_FILTER_PARAMS) {
    const value = firstParam(params, name);
    if (value !== undefined) filters[name] = value;
  }
  return filters;
}

export function hasAnyFilter(filters: AuditFilters): boolean {
  return Object.keys(filters).length > 0;
}

/**
 * The service's options for a page, unparsed: the filters as given (`ZListAuditEntriesOptions`
 * says which are wrong, by field) and one direction of paging, `after` (older) winning if a
 * hand-edited URL has both.
 */
export function toListOptions(
  filters: AuditFilters,
  paging: { after?: string; before?: string },
  limit: number,
): Record<string, string | number | undefined> {
  return {
    actorId: filters.actorId,
    actorType: filters.actorType,
    action: filters.action,
    entityType: filters.entityType,
    entityId: filters.entityId,
    customerId: filters.customerId,
    from: filters.from,
    to: filters.to,
    cursor: paging.after,
    before: paging.after === undefined ? paging.before : undefined,
    limit,
  };
}

/** `/audit` with these filters (and nothing else). */
export function auditHref(filters: AuditFilters): string {
  const params = new URLSearchParams();
  for (const name of AUDIT_FILTER_PARAMS) {
    const value = filters[name];
    if (value !== undefined) params.set(name, value);
  }
  const query = params.toString();
  return query === "" ? "/audit" : `/audit?${query}`;
}

/** Where an entity's history is: a customer's page, or the audit log filtered to the entity. */
export function entityHistoryHref(entityType: string, entityId: string): string {
  if (entityType === "customer") return `/customers/${encodeURIComponent(entityId)}`;
  return auditHref({ entityType, entityId });
}

/** The time presets offered beside From and To: each sets `from` that long before now. */
export const AUDIT_TIME_PRESETS = [
  { label: "Last hour", spanMs: 3_600_000 },
  { label: "Last 24 hours", spanMs: 86_400_000 },
  { label: "Last 7 days", spanMs: 7 * 86_400_000 },
] as const;

/**
 * Each preset's link: these filters with `from` that long before `nowMs` and no `to`, so the link
 * names a fixed instant (shared, it shows the same entries later, plus newer ones).
 */
export function timePresetLinks(
  filters: AuditFilters,
  nowMs: number,
): { readonly label: string; readonly href: string }[] {
  return AUDIT_TIME_PRESETS.map((preset) => ({
    label: preset.label,
    href: auditHref({
      ...filters,
      from: new Date(nowMs - preset.spanMs).toISOString(),
      to: undefined,
    }),
  }));
}
