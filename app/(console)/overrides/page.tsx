import type { Metadata } from "next";
import Link from "next/link";
import { redirect } from "next/navigation";
import { connection } from "next/server";
import { AlertList } from "@/components/alerts/alert-list";
import { ForwardPager } from "@/components/ops/forward-pager";
import styles from "@/components/ops/ops.module.css";
import { hrefWith, type PageSearchParams, singleParam } from "@/components/ops/search-params";
import { Badge, type BadgeTone } from "@/components/ui/badge";
import { Countdown } from "@/components/ui/countdown";
import { EmptyState } from "@/components/ui/empty-state";
import { ErrorState } from "@/components/ui/error-state";
import { LocalTime } from "@/components/ui/local-time";
import { ScrollRegion } from "@/components/ui/scroll-region";
import { formatFactor, formatLimit } from "@/lib/console";
import { describeRaiseChanges } from "@/lib/console/outbound-raise";
import {
  detectExpiringIncidents,
  type IncidentPage,
  type IncidentState,
  type IncidentWithState,
  isAppError,
  listIncidents,
  listIncidentsPage,
  listOutboundRaises,
  type RaisedOutboundBudget,
} from "@/lib/control";
import { can } from "@/lib/control/auth/roles";
import {
  type CustomerOverridePage,
  listAllCustomerOverrides,
} from "@/lib/control/customer-override/list-all-customer-overrides";
import { clock, controlDeps } from "@/lib/server/composition";
import { requirePrincipal } from "@/lib/server/current-principal";

export const metadata: Metadata = { title: "Overrides" };

const CURRENT_LIMIT = 100;
const HISTORY_LIMIT = 20;
const OVERRIDES_PAGE_SIZE = 25;

const STATE_TONE: Record<IncidentState, BadgeTone> = {
  active: "ok",
  upcoming: "warn",
  expired: "muted",
  reverted: "muted",
};

function incidentHref(incidentId: string): string {
  return `/incidents/${encodeURIComponent(incidentId)}`;
}

function incidentChange(incident: IncidentWithState): string {
  if (incident.factor !== null) return formatFactor(incident.factor);
  return incident.limit === null ? "" : formatLimit(incident.limit);
}

export default async function OverridesPage({
  searchParams,
}: {
  searchParams: Promise<PageSearchParams>;
}) {
  const params = await searchParams;
  const after = singleParam(params, "after");
  const inForceAfter = singleParam(params, "inForceAfter");
  const incidentParam = singleParam(params, "incident");
  const principal = await requirePrincipal("policy.read", {
    next: hrefWith("/overrides", { after, inForceAfter, incident: incidentParam }),
  });
  // Alerts link an expiring incident here (`AlertList`'s default): its own page has extend/revert.
  if (incidentParam !== undefined) redirect(`/incidents/${encodeURIComponent(incidentParam)}`);
  await connection();
  const serverNowMs = clock().nowMs();
  const [current, history, overrides, raisedBudgets] = await Promise.all([
    listIncidentsPage(
      {
        status: "current",
        limit: CURRENT_LIMIT,
        nowMs: serverNowMs,
        after: inForceAfter,
      },
      controlDeps(),
    ).catch((error: unknown): IncidentPage | string => {
      if (isAppError(error) && error.code === "VALIDATION_FAILED") return error.message;
      throw error;
    }),
    listIncidents({ status: "history", limit: HISTORY_LIMIT, nowMs: serverNowMs }, controlDeps()),
    listAllCustomerOverrides({ after, limit: OVERRIDES_PAGE_SIZE }, controlDeps()).catch(
      (error: unknown): CustomerOverridePage | string => {
        if (isAppError(error) && error.code === "VALIDATION_FAILED") return error.message;
        throw error;
      },
    ),
    listOutboundRaises(controlDeps(), serverNowMs),
  ]);
  const inForce = typeof current === "string" ? [] : current.incidents;
  const expiring = detectExpiringIncidents(inForce, { nowMs: serverNowMs });

  return (
    <>
      <header className="page-header">
        <div className={styles.headerRow}>
          <div>
            <h1>Overrides</h1>
            <p>
              Time-limited incident overrides, which end by themselves, and standing per-customer
              overrides.
            </p>
          </div>
          {can(principal.role, "incident.write") ? (
            <Link className="button" href="/incidents/new">
              Raise a limit (incident)
            </Link>
          ) : null}
        </div>
      </header>

      <AlertList
        alerts={expiring}
        nowMs={serverNowMs}
        incidentHref={incidentHref}
        canChange={can(principal.role, "incident.write")}
      />

      <section className="panel" aria-labelledby="current-heading">
        <h2 id="current-heading">Incident overrides in force</h2>
        {typeof current === "string" ? (
          <ErrorState
            title="This page link is out of date"
            message={current}
            retryHref="/overrides"
          />
        ) : current.incidents.length === 0 ? (
          <EmptyState title="No incident override is active or upcoming">
            Raise one from a customer's page when an incident needs it.
          </EmptyState>
        ) : (
          <>
            <IncidentTable incidents={current.incidents} serverNowMs={serverNowMs} isCurrent />
            <ForwardPager
              label="Incident override pages"
              firstHref={inForceAfter === undefined ? null : hrefWith("/overrides", { after })}
              nextHref={
                current.nextCursor === null
                  ? null
                  : hrefWith("/overrides", { after, inForceAfter: current.nextCursor })
              }
            />
          </>
        )}
      </section>

      <section className="panel" aria-labelledby="outbound-raises-heading">
        <h2 id="outbound-raises-heading">Outbound budgets raised</h2>
        {raisedBudgets.length === 0 ? (
          <EmptyState title="No outbound budget is raised">
            Raise one from its page when a provider changes your quota for a while.
          </EmptyState>
        ) : (
          <OutboundRaiseTable budgets={raisedBudgets} serverNowMs={serverNowMs} />
        )}
      </section>

      <section className="panel" aria-labelledby="customer-overrides-heading">
        <h2 id="customer-overrides-heading">Per-customer overrides</h2>
        {typeof overrides === "string" ? (
          <ErrorState
            title="This page link is out of date"
            message={overrides}
            retryHref="/overrides"
          />
        ) : overrides.overrides.length === 0 ? (
          <EmptyState title="No per-customer overrides">
            Customers run on their tier's limits.
          </EmptyState>
        ) : (
          <>
            <ScrollRegion className={styles.tableScroll} label="Per-customer overrides">
              <table className="data">
                <thead>
                  <tr>
                    <th scope="col">Customer</th>
                    <th scope="col">Scope</th>
                    <th scope="col">Limit</th>
                    <th scope="col">Last changed</th>
                  </tr>
                </thead>
                <tbody>
                  {overrides.overrides.map((override) => (
                    <tr key={override.scope} data-testid="customer-override-row">
                      <td>
                        <Link href={`/customers/${encodeURIComponent(override.customerId)}`}>
                          <code>{override.customerId}</code>
                        </Link>
                      </td>
                      <td>{override.endpointClass ?? "all endpoints"}</td>
                      <td>{formatLimit(override.limit)}</td>
                      <td>
                        <LocalTime at={override.updatedAt} relative />
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </ScrollRegion>
            <ForwardPager
              label="Customer override pages"
              firstHref={after === undefined ? null : hrefWith("/overrides", { inForceAfter })}
              nextHref={
                overrides.nextCursor === null
                  ? null
                  : hrefWith("/overrides", { after: overrides.nextCursor, inForceAfter })
              }
            />
          </>
        )}
      </section>

      <section className="panel" aria-labelledby="history-heading">
        <h2 id="history-heading">Recently ended incident overrides</h2>
        {history.length === 0 ? (
          <EmptyState title="No incident override has ended yet" />
        ) : (
          <>
            <IncidentTable incidents={history} serverNowMs={serverNowMs} isCurrent={false} />
            <p className="muted small">
              The latest {HISTORY_LIMIT} by start; the audit log holds every one.
            </p>
          </>
        )}
      </section>
    </>
  );
}

function IncidentTable({
  incidents,
  serverNowMs,
  isCurrent,
}: {
  incidents: readonly IncidentWithState[];
  serverNowMs: number;
  isCurrent: boolean;
}) {
  return (
    <ScrollRegion
      className={styles.tableScroll}
      label={isCurrent ? "Incident overrides in force" : "Recently ended incident overrides"}
    >
      <table className="data">
        <thead>
          <tr>
            <th scope="col">Incident</th>
            <th scope="col">Customer</th>
            <th scope="col">Scope</th>
            <th scope="col">Change</th>
            <th scope="col">{isCurrent ? "Expires" : "Ended"}</th>
            <th scope="col">Owner and reason</th>
          </tr>
        </thead>
        <tbody>
          {incidents.map((incident) => (
            <tr key={incident.id} data-testid={isCurrent ? "current-incident" : "ended-incident"}>
              <td>
                <Link href={`/incidents/${encodeURIComponent(incident.id)}`}>
                  <code>{incident.id}</code>
                </Link>{" "}
                <Badge tone={STATE_TONE[incident.state]}>{incident.state}</Badge>
              </td>
              <td>
                <Link href={`/customers/${encodeURIComponent(incident.customerId)}`}>
                  <code>{incident.customerId}</code>
                </Link>
              </td>
              <td>{incident.endpointClass ?? "all endpoints"}</td>
              <td>{incidentChange(incident)}</td>
              <td>
                {isCurrent ? (
                  <Countdown expiresAt={incident.expiresAt} serverNowMs={serverNowMs} />
                ) : (
                  <LocalTime
                    at={
                      incident.state === "reverted" && incident.revokedAt !== null
                        ? incident.revokedAt
                        : incident.expiresAt
                    }
                    relative
                  />
                )}
              </td>
              <td>
                {incident.owner}
                <div className={`muted small ${styles.reason}`}>{incident.reason}</div>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </ScrollRegion>
  );
}

function OutboundRaiseTable({
  budgets,
  serverNowMs,
}: {
  budgets: readonly RaisedOutboundBudget[];
  serverNowMs: number;
}) {
  return (
    <ScrollRegion className={styles.tableScroll} label="Outbound budgets raised">
      <table className="data">
        <thead>
          <tr>
            <th scope="col">Budget</th>
            <th scope="col">Change</th>
            <th scope="col">Expires</th>
            <th scope="col">Owner and reason</th>
          </tr>
        </thead>
        <tbody>
          {budgets.map((budget) => (
            <tr key={budget.name} data-testid="raised-outbound-budget">
              <td>
                <Link href={`/outbound-budgets/${encodeURIComponent(budget.name)}`}>
                  <code>outbound:{budget.name}</code>
                </Link>
              </td>
              <td>
                {describeRaiseChanges(budget, budget.raise).map((line) => (
                  <div key={line}>{line}</div>
                ))}
              </td>
              <td>
                <Countdown expiresAt={budget.raise.expiresAt} serverNowMs={serverNowMs} />
              </td>
              <td>
                {budget.raise.owner}
                <div className={`muted small ${styles.reason}`}>{budget.raise.reason}</div>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </ScrollRegion>
  );
}
