import type { Metadata } from "next";
import Link from "next/link";
import { Suspense } from "react";
import { AlertList } from "@/components/alerts/alert-list";
import { AutoRefresh } from "@/components/auto-refresh";
import { RejectionChart } from "@/components/charts/rejection-chart";
import { DegradedCell, FleetDegradedSummary } from "@/components/fleet/degraded-decisions";
import { EnforcerPolicyCell } from "@/components/fleet/enforcer-policy-cell";
import { RedisTopologyPanel } from "@/components/fleet/redis-topology";
import { EnforcerLagCell } from "@/components/ops/enforcer-lag";
import { PropagationPanel } from "@/components/regions/propagation-panel";
import { RejectedCustomersTable } from "@/components/rejected/rejected-customers-table";
import { Badge } from "@/components/ui/badge";
import { EmptyState } from "@/components/ui/empty-state";
import { ErrorState } from "@/components/ui/error-state";
import { LocalTime } from "@/components/ui/local-time";
import { ScrollRegion } from "@/components/ui/scroll-region";
import { Skeleton, SkeletonChart } from "@/components/ui/skeleton";
import {
  buildChartMarkers,
  buildFailoverMarkers,
  buildRejectionRateSeries,
  CHART_RANGES,
  type ChartRangeId,
  defaultChartRangeId,
  describeNoPolicy,
  formatNumber,
  formatPercent,
  isChartRangeId,
  type SearchParamsRecord,
} from "@/lib/console";
import { can, readLatestPropagation } from "@/lib/control";
import { evaluateAlerts } from "@/lib/control/alerts/evaluate-alerts";
import { listRateChanges } from "@/lib/control/audit/list-rate-changes";
import { countPendingChangeRequests } from "@/lib/control/change-request/list-change-requests";
import type { listEnforcers } from "@/lib/control/fleet/list-enforcers";
import { listRedisFailovers } from "@/lib/control/fleet/list-redis-failovers";
import { listRegionFleets } from "@/lib/control/fleet/list-region-fleets";
import { readDegradedDecisionAlert } from "@/lib/control/fleet/read-degraded-decisions";
import { findOldestMetricMinuteMs } from "@/lib/control/metric-minute/list-metric-minutes";
import {
  loadRegionScopeMinutes,
  loadScopeMinutes,
} from "@/lib/control/metric-minute/load-scope-minutes";
import { readGlobalShares } from "@/lib/control/region/read-global-shares";
import { listRejectedCustomers } from "@/lib/control/rejected-customer/list-rejected-customers";
import {
  clock,
  controlDeps,
  globalShareDeps,
  propagationDeps,
  regionFleetDeps,
  rejectedCustomerDeps,
  scopeMinutesDeps,
} from "@/lib/server/composition";
import { requirePrincipal } from "@/lib/server/current-principal";
import styles from "./overview.module.css";
import { RejectedAnonymousTable } from "./rejected-anonymous-table";

export const metadata: Metadata = { title: "Overview" };

/** How often the overview re-reads everything. */
const REFRESH_MS = 10_000;
/** Most changes marked on one chart. */
const MAX_MARKERS = 200;
/** Most customers in "Who is being rejected". */
const MAX_REJECTED_CUSTOMERS = 10;

/**
 * The rejected customers' span for each range: the gateways keep their per-customer tally 6
 * hours, so "last day" shows the last 6.
 */
const REJECTED_SPANS: Readonly<Record<ChartRangeId, { minutes: number; words: string }>> = {
  "15m": { minutes: 15, words: "last 15 minutes" },
  "1h": { minutes: 60, words: "last hour" },
  "1d": { minutes: 360, words: "last 6 hours (what the gateways keep per customer)" },
};

/** The region the fleet is filtered to (`?region=`), if it names a configured one. */
function regionOf(params: SearchParamsRecord): string | undefined {
  const raw = params.region;
  const value = typeof raw === "string" ? raw : raw?.[0];
  return regionFleetDeps().some((entry) => entry.region !== "" && entry.region === value)
    ? value
    : undefined;
}

/** The range the URL names (`?range=`), or null: the page then picks one that fits the data. */
function explicitRangeOf(params: SearchParamsRecord): ChartRangeId | null {
  const raw = params.range;
  const value = typeof raw === "string" ? raw : raw?.[0];
  return isChartRangeId(value) ? value : null;
}

/** The overview on `rangeId`, named in the URL so a reload keeps it. */
function rangeHref(rangeId: ChartRangeId): string {
  return `/?range=${rangeId}`;
}

/**
 * With no `?range=`: the smallest range that shows all the stored counts of the last day
 * (`defaultChartRangeId`), so a demo 15 minutes old opens on 15 minutes. The hour, the usual
 * view, when the database cannot say (the panels then say what is wrong themselves).
 */
async function defaultRangeId(nowMs: number): Promise<ChartRangeId> {
  const longestMs = Math.max(...Object.values(CHART_RANGES).map((range) => range.rangeMs));
  try {
    const oldestMs = await findOldestMetricMinuteMs({ sinceMs: nowMs - longestMs }, controlDeps());
    return defaultChartRangeId(oldestMs, nowMs);
  } catch (error: unknown) {
    console.error("overview: the oldest per-minute count could not be read", error);
    return "1h";
  }
}

export default async function OverviewPage({
  searchParams,
}: {
  searchParams: Promise<SearchParamsRecord>;
}) {
  const params = await searchParams;
  const explicitRangeId = explicitRangeOf(params);
  const region = regionOf(params);
  const principal = await requirePrincipal("metrics.read", {
    next: explicitRangeId === null ? "/" : rangeHref(explicitRangeId),
  });
  const rangeId = explicitRangeId ?? (await defaultRangeId(clock().nowMs()));
  const canRaise = can(principal.role, "incident.write");
  return (
    <>
      <header className="page-header">
        <h1>Overview</h1>
        <p>
          Rejection rates per scope, the enforcer fleet and the policy version each runs, and what
          needs attention.
        </p>
        <div className={styles.headerActions}>
          <AutoRefresh intervalMs={REFRESH_MS} />
          {canRaise ? (
            <Link href="/incidents/new" className="button">
              Raise limit
            </Link>
          ) : null}
        </div>
      </header>
      <RangeTabs current={rangeId} />
      <Suspense fallback={null}>
        <PendingChangeRequests />
      </Suspense>
      <Suspense
        key={`rejected-${rangeId}`}
        fallback={<PanelSkeleton title="Who is being rejected" lines={3} />}
      >
        <RejectedCustomersPanel
          rangeId={rangeId}
          canRaise={canRaise}
          canChangeLimits={can(principal.role, "tier.write")}
          canTryDryRun={can(principal.role, "candidate.write")}
        />
      </Suspense>
      <Suspense fallback={<PanelSkeleton title="Alerts" lines={2} />}>
        <AlertsPanel canChange={canRaise} />
      </Suspense>
      <section className="panel" aria-labelledby="rates-heading">
        <div className={styles.sectionHeader}>
          <h2 id="rates-heading">Rejection rate by scope</h2>
        </div>
        <Suspense key={`${rangeId}-${region ?? ""}`} fallback={<SkeletonChart />}>
          <RatesChart rangeId={rangeId} region={region} />
        </Suspense>
      </section>
      <Suspense fallback={<PanelSkeleton title="Enforcers" lines={3} />}>
        <LatestPropagation />
        <GlobalSharesPanel />
        <FleetPanel region={region} />
      </Suspense>
    </>
  );
}

function PanelSkeleton({ title, lines }: { title: string; lines: number }) {
  return (
    <section className="panel">
      <h2>{title}</h2>
      <Skeleton lines={lines} label={`Loading ${title.toLowerCase()}`} />
    </section>
  );
}

/** How many change requests wait for a second person; nothing when none does. */
async function PendingChangeRequests() {
  const pending = await countPendingChangeRequests(controlDeps());
  if (pending === 0) return null;
  return (
    <p className="panel" data-testid="pending-change-requests">
      <Badge tone="warn" dot>
        {pending === 1 ? "1 change request" : `${formatNumber(pending)} change requests`} waiting
        for approval
      </Badge>{" "}
      <Link href="/change-requests">Review the queue</Link>
    </p>
  );
}

function RangeTabs({ current }: { current: ChartRangeId }) {
  return (
    <nav aria-label="Time range">
      <ul className={styles.tabs}>
        {Object.values(CHART_RANGES).map((range) => (
          <li key={range.id}>
            <Link
              className={styles.tab}
              href={rangeHref(range.id)}
              aria-current={range.id === current ? "page" : undefined}
              scroll={false}
            >
              {range.label}
            </Link>
          </li>
        ))}
      </ul>
    </nav>
  );
}

async function RejectedCustomersPanel({
  rangeId,
  canRaise,
  canChangeLimits,
  canTryDryRun,
}: {
  rangeId: ChartRangeId;
  canRaise: boolean;
  canChangeLimits: boolean;
  canTryDryRun: boolean;
}) {
  const span = REJECTED_SPANS[rangeId];
  const heading = (
    <div className={styles.sectionHeader}>
      <h2 id="rejected-heading">Who is being rejected</h2>
      <span className="muted small">Customers and anonymous traffic, {span.words}</span>
    </div>
  );
  let page: Awaited<ReturnType<typeof listRejectedCustomers>>;
  try {
    page = await listRejectedCustomers(
      { minutes: span.minutes, limit: MAX_REJECTED_CUSTOMERS },
      rejectedCustomerDeps(),
    );
  } catch (error: unknown) {
    console.error("overview: the rejected customers could not be read", error);
    return (
      <section className="panel" aria-labelledby="rejected-heading">
        {heading}
        <ErrorState
          title="The rejected customers could not be read"
          message="The gateways count rejections per customer in Redis, which did not answer. The page retries on its next refresh."
          retryHref={rangeHref(rangeId)}
        />
      </section>
    );
  }
  const isAnyoneRejected = page.customers.length > 0 || page.anonymous.length > 0;
  return (
    <section className="panel" aria-labelledby="rejected-heading" data-testid="overview-rejected">
      {heading}
      {!isAnyoneRejected ? (
        <EmptyState title={`Nobody was rejected in the ${span.words}`}>
          Gateways count each customer's rejections per minute, and anonymous traffic's per limit;
          none were counted.
        </EmptyState>
      ) : null}
      {page.customers.length > 0 ? (
        <>
          <RejectedCustomersTable
            customers={page.customers}
            spanWords={span.words}
            canRaise={canRaise}
          />
          <p className="muted small">
            {page.rejectedCustomerCount > page.customers.length
              ? `The ${page.customers.length} most rejected of ${page.rejectedCustomerCount} customers rejected; `
              : ""}
            {formatNumber(page.totalRejected)} rejections in all.{" "}
            <Link href="/customers?sort=rejected">All customers by rejections</Link>
          </p>
        </>
      ) : isAnyoneRejected ? (
        <p className="muted small">No identified customer was rejected in the {span.words}.</p>
      ) : null}
      {page.anonymous.length > 0 ? (
        <>
          <h3 className={styles.subheading} id="rejected-anonymous-heading">
            Anonymous traffic, by limit
          </h3>
          <RejectedAnonymousTable
            limits={page.anonymous}
            spanWords={span.words}
            canChange={canChangeLimits}
            canTryDryRun={canTryDryRun}
          />
          <p className="muted small">
            {formatNumber(page.anonymousRejected)} anonymous rejections in all
            {page.customers.length > 0
              ? ` (${formatPercent(page.anonymousRejected / (page.anonymousRejected + page.totalRejected))} of every rejection)`
              : ""}
            . Gateways count requests without a customer per limit; no address is kept.
          </p>
        </>
      ) : isAnyoneRejected ? (
        <p className="muted small">No anonymous request was rejected in the {span.words}.</p>
      ) : null}
    </section>
  );
}

async function AlertsPanel({ canChange }: { canChange: boolean }) {
  let evaluated: Awaited<ReturnType<typeof evaluateAlerts>>;
  try {
    evaluated = await evaluateAlerts({ nowMs: clock().nowMs() }, scopeMinutesDeps());
  } catch (error: unknown) {
    console.error("overview: alerts could not be evaluated", error);
    return (
      <section className="panel" aria-labelledby="alerts-heading">
        <h2 id="alerts-heading">Alerts</h2>
        <ErrorState
          title="Alerts could not be evaluated"
          message="The per-minute counts or the incident overrides could not be read just now. The page retries on its next refresh."
          retryHref="/"
        />
      </section>
    );
  }
  return (
    <section className="panel" aria-labelledby="alerts-heading" data-testid="overview-alerts">
      <h2 id="alerts-heading">Alerts</h2>
      {evaluated.alerts.length === 0 ? (
        <p className={`muted ${styles.noAlerts}`}>
          No alerts: no scope's rejection rate moved sharply against its last hour, and no incident
          override expires in the next 15 minutes.
        </p>
      ) : (
        <AlertList alerts={evaluated.alerts} nowMs={evaluated.nowMs} canChange={canChange} />
      )}
    </section>
  );
}

async function RatesChart({
  rangeId,
  region,
}: {
  rangeId: ChartRangeId;
  /** With REGIONS: one region's counts; undefined: every region's total. */
  region: string | undefined;
}) {
  const range = CHART_RANGES[rangeId];
  const nowMs = clock().nowMs();
  try {
    const fromMs = nowMs - range.rangeMs - range.bucketMs;
    const regions = regionFleetDeps().filter(
      (entry) => entry.region !== "" && (region === undefined || entry.region === region),
    );
    const [minutes, changes, failovers] = await Promise.all([
      regions.length === 0
        ? loadScopeMinutes({ fromMs, nowMs }, scopeMinutesDeps())
        : loadRegionScopeMinutes(
            { fromMs, nowMs },
            regions.map((entry) => ({ region: entry.region, live: entry.deps })),
            controlDeps(),
          ),
      listRateChanges({ fromMs, limit: MAX_MARKERS }, controlDeps()),
      // A chart without its failover markers is still worth drawing.
      Promise.all(
        regionFleetDeps()
          .filter((entry) => region === undefined || entry.region === "" || entry.region === region)
          .map((entry) => listRedisFailovers({ fromMs }, entry.deps).catch(() => [])),
      ).then((lists) => lists.flat()),
    ]);
    const data = buildRejectionRateSeries(minutes.rows, range, {
      nowMs,
      includeCurrentBucket: minutes.hasLiveMinutes,
    });
    const markers = [
      ...buildChartMarkers(changes.changes, data),
      ...buildFailoverMarkers(failovers, data),
    ].sort((a, b) => a.atMs - b.atMs);
    return (
      <div data-testid="rejection-chart">
        <RejectionChart
          data={data}
          markers={markers}
          title={`Rejection rate per scope, ${region === undefined ? "" : `${region}, `}${range.label.toLowerCase()}${
            minutes.hasLiveMinutes ? " (the current minute included, still counting)" : ""
          }`}
        />
        {changes.hasMore ? (
          <p className="muted small">
            Only the latest {MAX_MARKERS} changes in this range are marked;{" "}
            <Link href={`/audit?from=${encodeURIComponent(new Date(fromMs).toISOString())}`}>
              see them all
            </Link>
            .
          </p>
        ) : null}
      </div>
    );
  } catch (error: unknown) {
    console.error("overview: the rejection chart could not be built", error);
    return (
      <ErrorState
        title="The chart could not be drawn"
        message="The per-minute counts could not be read just now. The page retries on its next refresh."
        retryHref={rangeHref(rangeId)}
      />
    );
  }
}

async function FleetPanel({ region }: { region: string | undefined }) {
  const entries = regionFleetDeps();
  const isRegional = entries.some((entry) => entry.region !== "");
  let fleets: Awaited<ReturnType<typeof listRegionFleets>>;
  let degradedAlert: Awaited<ReturnType<typeof readDegradedDecisionAlert>> = null;
  try {
    fleets = await listRegionFleets(entries);
    const home = entries[0];
    if (!isRegional && home !== undefined) {
      if (fleets[0]?.fleet === null) throw new Error(fleets[0]?.error ?? "unreadable");
      degradedAlert = await readDegradedDecisionAlert(home.deps);
    }
  } catch (error: unknown) {
    console.error("overview: the enforcer fleet could not be read", error);
    return (
      <section className="panel" aria-labelledby="fleet-heading">
        <h2 id="fleet-heading">Enforcers</h2>
        <ErrorState
          title="The fleet could not be read"
          message="Enforcers report their heartbeats to Redis, which did not answer. The status page says whether Redis is reachable."
          retryHref="/"
        />
      </section>
    );
  }
  const shown = fleets.filter((entry) => region === undefined || entry.region === region);
  const rows = shown.flatMap((entry) =>
    (entry.fleet?.enforcers ?? []).map((enforcer) => ({
      region: entry.region,
      enforcer,
      published: entry.fleet?.published ?? null,
    })),
  );
  const home = fleets[0]?.fleet ?? null;
  const nowMs = clock().nowMs();
  return (
    <section className="panel" aria-labelledby="fleet-heading" data-testid="overview-fleet">
      <div className={styles.sectionHeader}>
        <h2 id="fleet-heading">Enforcers</h2>
        {isRegional ? null : (
          <span className="muted small">
            {home?.published == null ? (
              "No policy version published yet"
            ) : (
              <>
                Published policy: <strong>v{home.published.version}</strong>
                {home.published.publishedAtMs !== null ? (
                  <>
                    {" "}
                    since <LocalTime at={home.published.publishedAtMs} relative />
                  </>
                ) : null}
              </>
            )}
          </span>
        )}
      </div>
      {isRegional ? <RegionFilter fleets={fleets} current={region} /> : null}
      {isRegional || home === null ? null : (
        <>
          <NoPolicyAlert fleet={home} />
          <FleetDegradedSummary reports={home.enforcers} alert={degradedAlert} />
        </>
      )}
      {rows.length === 0 ? (
        <EmptyState title="No enforcer is reporting">
          Gateways that embed the enforcer send a heartbeat every second; none has in the last 10
          seconds. Start one with <code>npm run gateway</code>.
        </EmptyState>
      ) : (
        <ScrollRegion className="table-scroll" label="Enforcers">
          <table className={`data ${styles.fleetTable}`}>
            <caption className="visually-hidden">
              Enforcers and the policy version each runs
            </caption>
            <thead>
              <tr>
                <th scope="col">Enforcer</th>
                {isRegional ? <th scope="col">Region</th> : null}
                <th scope="col">Host</th>
                <th scope="col">Policy version</th>
                <th scope="col">Lag</th>
                <th scope="col">Without Redis</th>
                <th scope="col">Last seen</th>
              </tr>
            </thead>
            <tbody>
              {rows.map(({ region: where, enforcer, published }) => (
                <tr key={`${where}/${enforcer.id}`} data-testid="enforcer-row" data-region={where}>
                  <th scope="row" data-label="Enforcer">
                    <code>{enforcer.id}</code>
                  </th>
                  {isRegional ? <td data-label="Region">{where}</td> : null}
                  <td data-label="Host">
                    {enforcer.host}
                    {enforcer.pid !== null ? (
                      <span className="muted small"> (pid {enforcer.pid})</span>
                    ) : null}
                  </td>
                  <td data-label="Policy version" data-testid="enforcer-policy">
                    <EnforcerPolicyCell enforcer={enforcer} />
                  </td>
                  <td data-label="Lag">
                    <EnforcerLagCell enforcer={enforcer} published={published} nowMs={nowMs} />
                  </td>
                  <td data-label="Without Redis">
                    <DegradedCell report={enforcer} />
                  </td>
                  <td data-label="Last seen">
                    <LocalTime at={enforcer.heartbeatAtMs} relative />
                    {nowMs - enforcer.heartbeatAtMs > 5_000 ? (
                      <>
                        {" "}
                        <Badge tone="warn">late</Badge>
                      </>
                    ) : null}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </ScrollRegion>
      )}
      {rows.length === 0 ? null : (
        <RedisTopologyPanel reports={rows.map((row) => row.enforcer)} isNested />
      )}
    </section>
  );
}

/** With REGIONS: where the latest policy version has reached, region by region. */
async function LatestPropagation() {
  const deps = propagationDeps();
  if (deps.regions.length === 0) return null;
  const propagation = await readLatestPropagation(deps);
  if (propagation === null) return null;
  return (
    <div className="panel">
      <PropagationPanel propagation={propagation} />
    </div>
  );
}

/** A share as a percentage: `70 %`, `2.5 %`. */
function formatShare(share: number): string {
  return `${Number((share * 100).toFixed(1))} %`;
}

/**
 * Each global limit's share per region, as the worker last wrote it to the region's Redis
 * (docs/regions.md, "Global budgets"); shown with REGIONS only (one Redis holds the whole limit).
 */
async function GlobalSharesPanel() {
  const deps = globalShareDeps();
  if (deps.regions.every((entry) => entry.region === "")) return null;
  let shares: Awaited<ReturnType<typeof readGlobalShares>>;
  try {
    shares = await readGlobalShares(deps);
  } catch (error: unknown) {
    console.error("overview: the global budgets' shares could not be read", error);
    return (
      <section className="panel" aria-labelledby="global-shares-heading">
        <h2 id="global-shares-heading">Global budgets</h2>
        <ErrorState
          title="The shares could not be read"
          message="The policy's global limits could not be listed just now. The page retries on its next refresh."
          retryHref="/"
        />
      </section>
    );
  }
  const regions = shares.limits[0]?.regions.map((entry) => entry.region) ?? [];
  return (
    <section className="panel" aria-labelledby="global-shares-heading" data-testid="global-shares">
      <h2 id="global-shares-heading">Global budgets</h2>
      {shares.limits.length === 0 ? (
        <EmptyState title="No limit is global">
          Every region enforces each limit in full. Mark a token-bucket tier limit or ceiling
          "Global across regions" in its editor to divide it among the regions by demand.
        </EmptyState>
      ) : (
        <ScrollRegion label="Each global limit's share per region">
          <table>
            <thead>
              <tr>
                <th scope="col">Limit</th>
                {regions.map((region) => (
                  <th key={region} scope="col">
                    {region}
                  </th>
                ))}
              </tr>
            </thead>
            <tbody>
              {shares.limits.map((limit) => (
                <tr key={limit.scope} data-testid={`global-share-${limit.scope}`}>
                  <th scope="row">
                    <code>{limit.scope}</code>
                  </th>
                  {limit.regions.map((entry) => (
                    <td key={entry.region}>
                      {entry.share !== null
                        ? formatShare(entry.share)
                        : entry.floorShare !== null
                          ? `floor (${formatShare(entry.floorShare)}): lease ended`
                          : "floor: none written yet"}
                    </td>
                  ))}
                </tr>
              ))}
            </tbody>
          </table>
        </ScrollRegion>
      )}
      {shares.unreadable.map((entry) => (
        <p key={entry.region} className="small" role="alert">
          {entry.region}'s Redis did not answer ({entry.error}); its enforcers keep their last share
          until its lease ends, then the floor.
        </p>
      ))}
    </section>
  );
}

/** Every region with its count of enforcers (or that its Redis did not answer), and the total. */
function RegionFilter({
  fleets,
  current,
}: {
  fleets: Awaited<ReturnType<typeof listRegionFleets>>;
  current: string | undefined;
}) {
  const total = fleets.reduce((sum, entry) => sum + (entry.fleet?.enforcers.length ?? 0), 0);
  return (
    <nav aria-label="Regions" data-testid="region-filter">
      <ul className={styles.regionFilter}>
        <li>
          <Link href="/" aria-current={current === undefined ? "page" : undefined}>
            All regions: {formatNumber(total)} in total
          </Link>
        </li>
        {fleets.map((entry) => (
          <li key={entry.region} data-region={entry.region}>
            <Link
              href={`/?region=${encodeURIComponent(entry.region)}`}
              aria-current={current === entry.region ? "page" : undefined}
            >
              {entry.region}:{" "}
              {entry.fleet === null ? (
                <Badge tone="bad">Redis unreachable</Badge>
              ) : (
                `${formatNumber(entry.fleet.enforcers.length)}, v${entry.fleet.published?.version ?? "none"}`
              )}
            </Link>
          </li>
        ))}
      </ul>
    </nav>
  );
}

/** Loud: a gateway without a policy admits every request. */
function NoPolicyAlert({ fleet }: { fleet: Awaited<ReturnType<typeof listEnforcers>> }) {
  const notice = describeNoPolicy(fleet);
  if (notice === null) return null;
  return (
    <div className="notice notice-bad" role="alert" data-testid="no-policy">
      <p>
        <strong>{notice.title}</strong>
      </p>
      <p className="small">
        {notice.detail} Without a policy: {notice.enforcerIds.join(", ")}.
      </p>
    </div>
  );
}
