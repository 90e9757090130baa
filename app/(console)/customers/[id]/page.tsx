import type { Metadata } from "next";
import Link from "next/link";
import { notFound } from "next/navigation";
import { connection } from "next/server";
import { AutoRefresh } from "@/components/auto-refresh";
import {
  findRegisteredOrSeen,
  SeenOnlyNotice,
  SeenOnlyTier,
} from "@/components/customers/seen-only";
import { AuditHistory } from "@/components/ops/audit-history";
import { ForwardPager } from "@/components/ops/forward-pager";
import { LimitsTrace } from "@/components/ops/limits-trace";
import styles from "@/components/ops/ops.module.css";
import { hrefWith, type PageSearchParams, singleParam } from "@/components/ops/search-params";
import { Badge } from "@/components/ui/badge";
import { Countdown } from "@/components/ui/countdown";
import { EmptyState } from "@/components/ui/empty-state";
import { ErrorState } from "@/components/ui/error-state";
import { LocalTime } from "@/components/ui/local-time";
import { ScrollRegion } from "@/components/ui/scroll-region";
import { formatFactor, formatLimit } from "@/lib/console";
import {
  type AuditPage,
  customerHistory,
  type Explanation,
  explainLimits,
  isAppError,
  listCustomerOverrides,
  listEndpointClasses,
  listIncidents,
} from "@/lib/control";
import { can } from "@/lib/control/auth/roles";
import { clock, controlDeps, explainDeps } from "@/lib/server/composition";
import { requirePrincipal } from "@/lib/server/current-principal";
import {
  type CustomerRejectionEntry,
  readCustomerRejections,
} from "@/lib/server/ops/customer-rejections";

export const metadata: Metadata = { title: "Customer" };

const HISTORY_PAGE_SIZE = 10;

type Explained =
  | { readonly ok: true; readonly explanation: Explanation }
  | { readonly ok: false; readonly message: string };

export default async function CustomerPage({
  params,
  searchParams,
}: {
  params: Promise<{ id: string }>;
  searchParams: Promise<PageSearchParams>;
}) {
  const { id: rawId } = await params;
  const id = decodeURIComponent(rawId);
  const query = await searchParams;
  const historyCursor = singleParam(query, "history");
  const selfHref = hrefWith(`/customers/${encodeURIComponent(id)}`, { history: historyCursor });
  const principal = await requirePrincipal("policy.read", { next: selfHref });
  await connection();

  // A customer the registry lacks but the gateways report has a page too (`seen` set).
  const { customer, seen } = await findRegisteredOrSeen(id);
  if (customer === null) notFound();

  const serverNowMs = clock().nowMs();
  const [classes, incidents, overrides, rejections, history] = await Promise.all([
    listEndpointClasses(controlDeps()),
    listIncidents({ customerId: id, status: "current", nowMs: serverNowMs }, controlDeps()),
    listCustomerOverrides(id, controlDeps()),
    readCustomerRejections(id, 50).then(
      (entries) => ({ ok: true as const, entries }),
      (error: unknown) => ({
        ok: false as const,
        message: error instanceof Error ? error.message : "Redis did not answer",
      }),
    ),
    customerHistory(id, { cursor: historyCursor, limit: HISTORY_PAGE_SIZE }, controlDeps()).catch(
      (error: unknown): AuditPage | string => {
        if (isAppError(error) && error.code === "VALIDATION_FAILED") return error.message;
        throw error;
      },
    ),
  ]);
  const deps = explainDeps();
  // One peek per endpoint class: a few Redis reads each, nothing consumed.
  const explained: Explained[] = await Promise.all(
    classes.map((endpointClass) =>
      explainLimits(
        {
          customerId: id,
          endpointClass: endpointClass.name,
          tier: seen?.reportedTier ?? undefined,
        },
        deps,
      ).then(
        (explanation): Explained => ({ ok: true, explanation }),
        (error: unknown): Explained => {
          if (isAppError(error)) return { ok: false, message: error.message };
          throw error;
        },
      ),
    ),
  );
  const mayRaise = can(principal.role, "incident.write");
  const raiseHref = hrefWith("/incidents/new", { customer: id });
  const isRejecting =
    rejections.ok && rejections.entries.some((r) => r.atMs > serverNowMs - 60_000);

  return (
    <>
      <header className="page-header">
        <p className="small">
          <Link href="/customers">← Customers</Link>
        </p>
        <div className={styles.headerRow}>
          <div>
            <h1 className={styles.wrap}>
              {seen === null ? `${customer.displayName} ` : null}
              <code className="muted">{customer.id}</code>
            </h1>
            <p>
              {seen === null ? (
                <>
                  Tier <Badge tone="info">{customer.tier}</Badge>
                </>
              ) : (
                <SeenOnlyTier seen={seen} />
              )}
              {isRejecting ? (
                <>
                  {" "}
                  <Badge tone="bad" dot>
                    rejected in the last minute
                  </Badge>
                </>
              ) : null}{" "}
              <AutoRefresh intervalMs={10_000} />
            </p>
          </div>
          {mayRaise ? (
            <Link className={`button ${styles.raise}`} href={raiseHref}>
              Raise limit (incident)
            </Link>
          ) : null}
        </div>
      </header>

      {seen !== null ? <SeenOnlyNotice seen={seen} mayRaise={mayRaise} /> : null}

      <section className="panel" aria-labelledby="incidents-heading">
        <h2 id="incidents-heading">Active incident overrides</h2>
        {incidents.length === 0 ? (
          <p className="muted">None: the customer runs on its tier and overrides.</p>
        ) : (
          <ul>
            {incidents.map((incident) => (
              <li key={incident.id} data-testid="active-incident">
                <Link href={`/incidents/${encodeURIComponent(incident.id)}`}>
                  <code>{incident.id}</code>
                </Link>{" "}
                on {incident.endpointClass ?? "all endpoints"}:{" "}
                {incident.factor !== null
                  ? formatFactor(incident.factor)
                  : incident.limit !== null
                    ? formatLimit(incident.limit)
                    : ""}{" "}
                <Badge tone={incident.state === "active" ? "ok" : "warn"}>{incident.state}</Badge>{" "}
                <Countdown expiresAt={incident.expiresAt} serverNowMs={serverNowMs} />
              </li>
            ))}
          </ul>
        )}
        {overrides.length > 0 ? (
          <>
            <h3 className="small">Customer overrides (no expiry)</h3>
            <ul>
              {overrides.map((override) => (
                <li key={override.scope}>
                  <code>{override.scope}</code>: {formatLimit(override.limit)}
                </li>
              ))}
            </ul>
          </>
        ) : null}
      </section>

      <section className="panel" aria-labelledby="limits-heading">
        <h2 id="limits-heading">Limits in effect, by endpoint class</h2>
        <p className="muted small">
          Every layer a request is checked against; the request needs all of them. “Live” is a
          read-only peek at the shared Redis buckets: nothing is consumed.
        </p>
        {classes.length === 0 ? (
          <EmptyState title="No endpoint classes">The policy defines none yet.</EmptyState>
        ) : (
          classes.map((endpointClass, index) => {
            const result = explained[index];
            return (
              <div
                key={endpointClass.name}
                className={styles.classBlock}
                data-testid="class-limits"
                data-class={endpointClass.name}
              >
                <h3>
                  {endpointClass.displayName ?? endpointClass.name}{" "}
                  <code className="muted small">{endpointClass.name}</code>{" "}
                  <span className="muted small">cost {endpointClass.cost} per request</span>
                </h3>
                {result === undefined ? null : result.ok ? (
                  <>
                    {result.explanation.liveError !== null ? (
                      <p className="muted small" role="status">
                        {result.explanation.liveError}
                      </p>
                    ) : null}
                    <LimitsTrace explanation={result.explanation} serverNowMs={serverNowMs} />
                  </>
                ) : (
                  <p className="muted">{result.message}</p>
                )}
              </div>
            );
          })
        )}
      </section>

      <section className="panel" aria-labelledby="rejections-heading">
        <h2 id="rejections-heading">Recent rejections</h2>
        <RecentRejections rejections={rejections} />
      </section>

      <section className="panel" aria-labelledby="history-heading">
        <h2 id="history-heading">History</h2>
        {typeof history === "string" ? (
          <ErrorState
            title="This history page link is out of date"
            message={history}
            retryHref={`/customers/${encodeURIComponent(id)}`}
          />
        ) : history.entries.length === 0 ? (
          <EmptyState title="No changes recorded for this customer" />
        ) : (
          <>
            <AuditHistory entries={history.entries} />
            <ForwardPager
              label="History pages"
              firstHref={
                historyCursor === undefined ? null : `/customers/${encodeURIComponent(id)}`
              }
              nextHref={
                history.nextCursor === null
                  ? null
                  : hrefWith(`/customers/${encodeURIComponent(id)}`, {
                      history: history.nextCursor,
                    })
              }
            />
          </>
        )}
      </section>
    </>
  );
}

function RecentRejections({
  rejections,
}: {
  rejections:
    | { readonly ok: true; readonly entries: readonly CustomerRejectionEntry[] }
    | { readonly ok: false; readonly message: string };
}) {
  if (!rejections.ok) {
    return (
      <p className="muted" role="status">
        Recent rejections could not be read from Redis: {rejections.message}
      </p>
    );
  }
  if (rejections.entries.length === 0) {
    return (
      <EmptyState title="No rejections in the last hour">
        Enforcers list each customer's latest rejections for an hour.
      </EmptyState>
    );
  }
  const groups = groupRejections(rejections.entries);
  const total = groups.reduce((sum, group) => sum + group.count, 0);
  return (
    <>
      <p className="muted small">
        {total.toLocaleString("en-US")} {total === 1 ? "rejection" : "rejections"} in the enforcers'
        latest {rejections.entries.length} {rejections.entries.length === 1 ? "report" : "reports"}{" "}
        (they keep each customer's recent ones for an hour; rejections by one limit within a second
        are reported together), by the limit that rejected them.
      </p>
      <ScrollRegion className={styles.tableScroll} label="Recent rejections">
        <table className="data" data-testid="rejections">
          <thead>
            <tr>
              <th scope="col">Rejected by</th>
              <th scope="col">Endpoint class</th>
              <th scope="col">Count</th>
              <th scope="col">Latest</th>
              <th scope="col">Earliest</th>
            </tr>
          </thead>
          <tbody>
            {groups.map((group) => (
              <tr key={`${group.scope}|${group.endpointClass ?? ""}`} data-testid="rejection-row">
                <td>
                  <code>{group.scope}</code>
                </td>
                <td>{group.endpointClass ?? <span className="muted">unknown</span>}</td>
                <td>{group.count.toLocaleString("en-US")}</td>
                <td>
                  <LocalTime at={group.latestAtMs} relative />
                </td>
                <td>
                  <LocalTime at={group.earliestAtMs} relative />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </ScrollRegion>
    </>
  );
}

interface RejectionGroup {
  readonly scope: string;
  readonly endpointClass: string | null;
  count: number;
  latestAtMs: number;
  earliestAtMs: number;
}

/** Rejections by (limit, endpoint class), the most recently rejecting first. */
function groupRejections(entries: readonly CustomerRejectionEntry[]): RejectionGroup[] {
  const groups = new Map<string, RejectionGroup>();
  for (const entry of entries) {
    const key = `${entry.scope}|${entry.endpointClass ?? ""}`;
    const group = groups.get(key);
    if (group === undefined) {
      groups.set(key, {
        scope: entry.scope,
        endpointClass: entry.endpointClass,
        count: entry.count,
        latestAtMs: entry.atMs,
        earliestAtMs: entry.firstAtMs,
      });
    } else {
      group.count += entry.count;
      group.latestAtMs = Math.max(group.latestAtMs, entry.atMs);
      group.earliestAtMs = Math.min(group.earliestAtMs, entry.firstAtMs);
    }
  }
  return [...groups.values()].sort((a, b) => b.latestAtMs - a.latestAtMs);
}
