import type { Metadata } from "next";
import Link from "next/link";
import { Suspense } from "react";
import { PropagationPanel } from "@/components/regions/propagation-panel";
import { EmptyState } from "@/components/ui/empty-state";
import { ErrorState } from "@/components/ui/error-state";
import { LocalTime } from "@/components/ui/local-time";
import { Pager } from "@/components/ui/pager";
import { buildPageLinks, type SearchParamsRecord } from "@/lib/console";
import {
  ACTOR_TYPES,
  AUDIT_ACTIONS,
  AUDIT_ENTITY_TYPES,
  type FieldError,
  getAuditEntry,
  isAppError,
  listApiTokens,
  listAuditEntries,
  listOperators,
  readPropagation,
  ZListAuditEntriesOptions,
} from "@/lib/control";
import { parseOptions } from "@/lib/control/change-context";
import { authDeps, controlDeps, propagationDeps } from "@/lib/server/composition";
import { requirePrincipal } from "@/lib/server/current-principal";
import styles from "./audit.module.css";
import { AuditEntryCard } from "./audit-entry-card";
import {
  type AuditFilters,
  auditHref,
  entityHistoryHref,
  firstParam,
  hasAnyFilter,
  readAuditFilters,
  timePresetLinks,
  toListOptions,
} from "./audit-search-params";
import { ChainStatus } from "./chain-status";
import { FilterForm } from "./filter-form";
import { TimeRangeFields } from "./time-range-fields";

export const metadata: Metadata = { title: "Audit log" };

/** Entries per page. */
const PAGE_SIZE = 25;

function currentPath(params: SearchParamsRecord): string {
  const query = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    if (typeof value === "string") query.set(key, value);
  }
  const text = query.toString();
  return text === "" ? "/audit" : `/audit?${text}`;
}

export default async function AuditPage({
  searchParams,
}: {
  searchParams: Promise<SearchParamsRecord>;
}) {
  const params = await searchParams;
  await requirePrincipal("audit.read", { next: currentPath(params) });

  const entryId = firstParam(params, "entry");
  if (entryId !== undefined) return <SingleEntry id={entryId} />;

  const filters = readAuditFilters(params);
  const [operators, tokens] = await Promise.all([
    listOperators(authDeps()),
    listApiTokens({ includeInactive: true }, authDeps()),
  ]);
  const actorOptions = [
    ...operators.map((operator) => ({
      id: operator.id,
      label: `${operator.name} (${operator.email})`,
      group: "Operators",
    })),
    ...tokens.map((token) => ({ id: token.id, label: token.name, group: "API tokens" })),
  ];

  let result: Awaited<ReturnType<typeof listAuditEntries>> | null = null;
  let fieldErrors: readonly FieldError[] = [];
  try {
    const options = parseOptions(
      ZListAuditEntriesOptions,
      toListOptions(
        filters,
        { after: firstParam(params, "after"), before: firstParam(params, "before") },
        PAGE_SIZE,
      ),
    );
    result = await listAuditEntries(options, controlDeps());
  } catch (error: unknown) {
    if (!(isAppError(error) && error.code === "VALIDATION_FAILED")) throw error;
    // The service names its paging option `cursor`; this page's URL calls it `after`.
    fieldErrors = error.fieldErrors.map((fieldError) =>
      fieldError.path === "cursor"
        ? { path: "after", message: fieldError.message.replace(/^cursor /, "after ") }
        : fieldError,
    );
  }

  return (
    <>
      <header className="page-header">
        <h1>Audit log</h1>
        <p>
          Who changed which limit, when, from what to what, and why. Newest first; filter to share a
          link to exactly these changes. Every entry can also be sent as it is written to{" "}
          <Link href="/audit/webhook">a webhook</Link>.
        </p>
      </header>
      <Suspense fallback={<p className="muted small">Verifying the audit chain…</p>}>
        <ChainStatus />
      </Suspense>
      <section className="panel" aria-labelledby="audit-filters-heading">
        <h2 id="audit-filters-heading" className="visually-hidden">
          Filters
        </h2>
        <AuditFilterForm filters={filters} actorOptions={actorOptions} />
        <nav aria-label="Time presets" className={styles.presets}>
          <span className="muted small">Since:</span>
          {timePresetLinks(filters, controlDeps().clock.nowMs()).map((preset) => (
            <Link key={preset.label} href={preset.href} className="small">
              {preset.label}
            </Link>
          ))}
        </nav>
      </section>
      {fieldErrors.length > 0 ? (
        <ErrorState
          title="These filters cannot be used"
          message={
            <>
              <ul className={styles.fieldErrors}>
                {fieldErrors.map((fieldError) => (
                  <li key={`${fieldError.path}:${fieldError.message}`}>
                    <code>{fieldError.path}</code>: {fieldError.message}
                  </li>
                ))}
              </ul>
              <p>
                <Link href="/audit">Clear filters</Link>
              </p>
            </>
          }
        />
      ) : null}
      {result !== null ? <AuditResults filters={filters} params={params} page={result} /> : null}
    </>
  );
}

function AuditResults({
  filters,
  params,
  page,
}: {
  filters: AuditFilters;
  params: SearchParamsRecord;
  page: Awaited<ReturnType<typeof listAuditEntries>>;
}) {
  const links = buildPageLinks({
    pathname: "/audit",
    params,
    nextCursor: page.nextCursor,
    previousCursor: page.previousCursor,
  });
  if (page.entries.length === 0) {
    const isFiltered = hasAnyFilter(filters);
    return (
      <EmptyState
        title={isFiltered ? "No entries match these filters" : "No changes recorded yet"}
        action={
          isFiltered ? (
            <Link href="/audit" className="button button-secondary">
              Clear filters
            </Link>
          ) : links.firstHref !== null ? (
            <Link href={links.firstHref}>Back to the newest entries</Link>
          ) : undefined
        }
      >
        {isFiltered
          ? "Widen the time range or remove a filter."
          : "Every change to the policy, customers, operators and tokens appears here."}
      </EmptyState>
    );
  }
  return (
    <>
      <p className={`muted small ${styles.summary}`} data-testid="audit-summary">
        Showing {page.entries.length} {page.entries.length === 1 ? "entry" : "entries"}
        {hasAnyFilter(filters) ? " matching the filters" : ""}
        {filters.from !== undefined ? (
          <>
            {" "}
            from <LocalTime at={filters.from} />
          </>
        ) : null}
        {filters.to !== undefined ? (
          <>
            {" "}
            until before <LocalTime at={filters.to} />
          </>
        ) : null}
        , newest first.
      </p>
      <Pager links={links} label="Audit log pages (top)" />
      <div className={styles.entries}>
        {page.entries.map((entry) => (
          <AuditEntryCard key={entry.id} entry={entry} />
        ))}
      </div>
      <Pager links={links} label="Audit log pages" />
    </>
  );
}

function AuditFilterForm({
  filters,
  actorOptions,
}: {
  filters: AuditFilters;
  actorOptions: readonly { id: string; label: string; group: string }[];
}) {
  const isKnownActor =
    filters.actorId === undefined || actorOptions.some((option) => option.id === filters.actorId);
  // Keyed by the filters, so going to another filtered view resets what the inputs show.
  return (
    <FilterForm
      key={auditHref(filters)}
      action="/audit"
      label="Filter the audit log"
      className={styles.filters}
    >
      <div className={styles.field}>
        <label htmlFor="audit-filter-actorId">Actor</label>
        <select id="audit-filter-actorId" name="actorId" defaultValue={filters.actorId ?? ""}>
          <option value="">Anyone</option>
          {isKnownActor ? null : <option value={filters.actorId}>{filters.actorId}</option>}
          {["Operators", "API tokens"].map((group) => (
            <optgroup key={group} label={group}>
              {actorOptions
                .filter((option) => option.group === group)
                .map((option) => (
                  <option key={option.id} value={option.id}>
                    {option.label}
                  </option>
                ))}
            </optgroup>
          ))}
        </select>
      </div>
      <ChoiceFilter
        name="actorType"
        label="Actor kind"
        choices={ACTOR_TYPES}
        value={filters.actorType}
      />
      <ChoiceFilter name="action" label="Action" choices={AUDIT_ACTIONS} value={filters.action} />
      <ChoiceFilter
        name="entityType"
        label="Entity type"
        choices={AUDIT_ENTITY_TYPES}
        value={filters.entityType}
      />
      <div className={styles.field}>
        <label htmlFor="audit-filter-entityId">Entity id</label>
        <input
          id="audit-filter-entityId"
          name="entityId"
          defaultValue={filters.entityId ?? ""}
          placeholder="pro, customer:acme"
          autoComplete="off"
        />
      </div>
      <div className={styles.field}>
        <label htmlFor="audit-filter-customerId">Customer</label>
        <input
          id="audit-filter-customerId"
          name="customerId"
          defaultValue={filters.customerId ?? ""}
          placeholder="customer id"
          autoComplete="off"
        />
      </div>
      <TimeRangeFields from={filters.from} to={filters.to} className={styles.field} />
      <div className={styles.actions}>
        <button type="submit" className="button">
          Apply filters
        </button>
        {hasAnyFilter(filters) ? <Link href="/audit">Clear filters</Link> : null}
      </div>
    </FilterForm>
  );
}

async function SingleEntry({ id }: { id: string }) {
  let entry: Awaited<ReturnType<typeof getAuditEntry>>;
  try {
    entry = await getAuditEntry(id, controlDeps());
  } catch (error: unknown) {
    if (!(isAppError(error) && error.code === "NOT_FOUND")) throw error;
    return (
      <>
        <header className="page-header">
          <h1>Audit entry</h1>
        </header>
        <EmptyState
          title="There is no such audit entry"
          action={<Link href="/audit">Open the audit log</Link>}
        >
          The link may be mistyped. Audit entries are never deleted.
        </EmptyState>
      </>
    );
  }
  const regions = propagationDeps();
  const propagation =
    entry.policyVersion === null || regions.regions.length === 0
      ? null
      : await readPropagation(entry.policyVersion, regions);
  return (
    <>
      <header className="page-header">
        <h1>Audit entry #{entry.id}</h1>
        <p>
          <Link href={entityHistoryHref(entry.entityType, entry.entityId)}>
            History of {entry.entityType} {entry.entityId}
          </Link>{" "}
          · <Link href="/audit">The whole log</Link>
        </p>
      </header>
      <div className={styles.entries}>
        <AuditEntryCard entry={entry} isDiffOpen />
      </div>
      {propagation === null ? null : <PropagationPanel propagation={propagation} />}
    </>
  );
}

/** A filter that is one of a closed set of values, or any. */
function ChoiceFilter({
  name,
  label,
  choices,
  value,
}: {
  name: string;
  label: string;
  choices: readonly string[];
  value: string | undefined;
}) {
  return (
    <div className={styles.field}>
      <label htmlFor={`audit-filter-${name}`}>{label}</label>
      <select id={`audit-filter-${name}`} name={name} defaultValue={value ?? ""}>
        <option value="">Any</option>
        {choices.map((choice) => (
          <option key={choice} value={choice}>
            {choice}
          </option>
        ))}
      </select>
    </div>
  );
}
