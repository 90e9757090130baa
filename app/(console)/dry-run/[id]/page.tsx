import { isRecordId, limitAtScope } from "@limitplane/enforcer/policy";
import type { Metadata } from "next";
import Link from "next/link";
import { notFound } from "next/navigation";
import type { ReactNode } from "react";
import { AutoRefresh } from "@/components/auto-refresh";
import { DryRunChart } from "@/components/charts/dry-run-chart";
import { LocalTime } from "@/components/ui/local-time";
import {
  buildChartMarkers,
  buildDryRunSeries,
  CHART_RANGES,
  type ChartMarker,
  type ChartWindow,
  chartWindow,
  formatLimit,
  formatNumber,
  formatPercent,
  isChartRangeId,
} from "@/lib/console";
import {
  can,
  getCandidate,
  getPolicySettings,
  isAppError,
  listEndpointClasses,
  listTiers,
  MINUTE_MS,
  type ScopeMinuteCount,
} from "@/lib/control";
import type { CandidateLifecycle } from "@/lib/control/candidate/read-candidate-lifecycle";
import type { CandidateComparison } from "@/lib/control/dry-run/compare-candidate";
import { readCandidateComparisons } from "@/lib/control/dry-run/read-candidate-comparisons";
import { clock, controlDeps, scopeCountsDeps } from "@/lib/server/composition";
import { requirePrincipal } from "@/lib/server/current-principal";
import { describePolicyLimit, describeScope } from "../../policies/_components/policy-words";
import { CandidateActions } from "../_components/candidate-actions";
import {
  COUNTED_WORDS,
  ComparedSpanWords,
  ComparisonSentence,
  countsDifferenceWords,
  NotStartedWords,
} from "../_components/compared-span";
import { UpdateCandidateForm } from "../_components/update-candidate-form";
import styles from "../dry-run.module.css";

/** The candidate's creation and each change inside the window, as chart markers. */
function lifecycleMarkers(
  id: string,
  lifecycle: CandidateLifecycle,
  window: ChartWindow,
): ChartMarker[] {
  const labelOf = (event: CandidateLifecycle["events"][number]) => {
    const limit = event.limit === null ? "" : ` ${formatLimit(event.limit)}`;
    const target = event.target === null ? "" : ` on ${event.target}`;
    return event.kind === "created"
      ? `${id} created:${limit}${target}`
      : `${id} changed to${limit}${target}`;
  };
  const recorded = buildChartMarkers(
    lifecycle.events.flatMap((event) =>
      event.auditEntryId === null
        ? []
        : [
            {
              atMs: event.atMs,
              auditEntryId: event.auditEntryId,
              action: event.kind === "created" ? "candidate.create" : "candidate.update",
              label: labelOf(event),
            },
          ],
    ),
    window,
  );
  // A creation the audit log does not record (an imported policy) links to the candidate's history.
  const unrecorded = lifecycle.events
    .filter(
      (event) =>
        event.auditEntryId === null && event.atMs >= window.startMs && event.atMs < window.endMs,
    )
    .map(
      (event): ChartMarker => ({
        atMs: event.atMs,
        auditEntryId: `unrecorded-${event.atMs}`,
        action: "candidate.create",
        kind: "policy-change",
        label: labelOf(event),
        href: `/audit?entityType=candidate&entityId=${encodeURIComponent(id)}`,
      }),
    );
  return [...unrecorded, ...recorded].sort((a, b) => a.atMs - b.atMs);
}

/** Minutes of an earlier candidate of the same id (before this one's creation minute) are not its. */
function withinLife(
  rows: readonly ScopeMinuteCount[],
  candidateScope: string,
  createdAtMs: number,
): ScopeMinuteCount[] {
  const creationMinuteMs = Math.floor(createdAtMs / MINUTE_MS) * MINUTE_MS;
  return rows.filter(
    (row) => row.scope !== candidateScope || row.minuteStartMs >= creationMinuteMs,
  );
}

function Total({
  testId,
  comparison,
  side,
  children,
}: {
  testId: string;
  comparison: CandidateComparison;
  side: keyof typeof COUNTED_WORDS;
  children: ReactNode;
}) {
  const totals = comparison.status === "not-started" ? null : comparison[side];
  return (
    <div
      className={styles.total}
      data-testid={`${testId}-box`}
      data-span-start-ms={comparison.span.startMs}
      data-span-end-ms={comparison.span.endMs}
    >
      <span className={styles.totalValue} data-testid={testId}>
        {totals === null ? "—" : formatNumber(totals.blocked)}
      </span>
      <span className="small">
        {children}
        {totals === null
          ? ": nothing counted yet"
          : totals.requests === 0
            ? ": no requests"
            : `, of ${formatNumber(totals.requests)} requests ${COUNTED_WORDS[side]} (${formatPercent(totals.rate)})`}
      </span>
    </div>
  );
}

export const metadata: Metadata = { title: "Dry-run candidate" };

export default async function CandidatePage({
  params,
  searchParams,
}: {
  params: Promise<{ id: string }>;
  searchParams: Promise<Record<string, string | string[] | undefined>>;
}) {
  const { id } = await params;
  const rangeParam = (await searchParams).range;
  const range = CHART_RANGES[isChartRangeId(rangeParam) ? rangeParam : "15m"];
  const principal = await requirePrincipal("policy.read", {
    next: `/dry-run/${encodeURIComponent(id)}`,
  });
  if (!isRecordId(id)) notFound();
  const candidate = await getCandidate(id, controlDeps()).catch((error: unknown) => {
    if (isAppError(error) && error.code === "NOT_FOUND") return null;
    throw error;
  });
  if (candidate === null) notFound();
  const [tiers, endpointClasses, settings] = await Promise.all([
    listTiers(controlDeps()),
    listEndpointClasses(controlDeps()),
    getPolicySettings(controlDeps()),
  ]);
  const current = limitAtScope(
    {
      defaultTier: settings.defaultTier,
      defaultEndpointClass: settings.defaultEndpointClass,
      tiers,
      endpointClasses,
      ceilings: settings.ceilings,
    },
    candidate.target,
  );
  const nowMs = clock().nowMs();
  const window = chartWindow(range, { nowMs, includeCurrentBucket: true });
  const read = await readCandidateComparisons(
    {
      candidates: [candidate],
      range: { startMs: window.startMs, endMs: window.endMs, label: range.label },
      nowMs,
    },
    scopeCountsDeps(),
  );
  const item = read.items[0];
  if (item === undefined) throw new Error("a comparison is read for the candidate");
  const { comparison, lifecycle, candidateScope: dryRunScope } = item;
  const data = buildDryRunSeries(withinLife(read.rows, dryRunScope, lifecycle.createdAtMs), range, {
    nowMs,
    includeCurrentBucket: true,
    pairs: [
      {
        enforcedScope: candidate.target,
        dryRunScope,
        label: `${candidate.id}: ${formatLimit(candidate.limit)} next to ${describePolicyLimit(current)}`,
      },
    ],
  });
  const markers = lifecycleMarkers(candidate.id, lifecycle, data);
  const evidence = <ComparisonSentence comparison={comparison} targetScope={candidate.target} />;
  const countsDifference = countsDifferenceWords(comparison, candidate.target);
  const promoteSummary =
    current === null
      ? `Enforce ${formatLimit(candidate.limit)} as a new limit on ${candidate.target} (${describeScope(candidate.target)}).`
      : `Enforce ${formatLimit(candidate.limit)} on ${candidate.target} (${describeScope(candidate.target)}) instead of ${formatLimit(current)}.`;
  return (
    <>
      <header className="page-header">
        <p className="small">
          <Link href="/dry-run">← Dry-run</Link>
        </p>
        <h1>
          Candidate <span className="mono">{candidate.id}</span>
        </h1>
        <p>
          Counted in dry-run next to <code>{candidate.target}</code> (
          {describeScope(candidate.target)}), for the same customers, on its own bucket: it never
          rejects a request. <AutoRefresh intervalMs={5_000} />
        </p>
      </header>

      <section className="panel" aria-labelledby="rule-heading">
        <h2 id="rule-heading">The rule and the candidate</h2>
        <dl className="facts">
          <dt>In force</dt>
          <dd data-testid="in-force">{describePolicyLimit(current)}</dd>
          <dt>Candidate</dt>
          <dd data-testid="candidate-limit">
            <strong>{formatLimit(candidate.limit)}</strong>
          </dd>
          <dt>Created</dt>
          <dd>
            by {candidate.createdBy}, <LocalTime at={candidate.createdAt} />
          </dd>
        </dl>
        <p className="muted small">
          Customers whose own override or incident outranks <code>{candidate.target}</code> are not
          counted: promoting would not change their limit.
        </p>
      </section>

      <section className="panel" aria-labelledby="traffic-heading">
        <h2 id="traffic-heading">On real traffic: {range.label.toLowerCase()}</h2>
        <nav className={styles.ranges} aria-label="Time range">
          {Object.values(CHART_RANGES).map((option) => (
            <Link
              key={option.id}
              href={`/dry-run/${encodeURIComponent(candidate.id)}?range=${option.id}`}
              aria-current={option.id === range.id ? "page" : undefined}
            >
              {option.label}
            </Link>
          ))}
        </nav>
        {!read.isLive ? (
          <p className="notice" role="status">
            Redis cannot be read: the last few minutes are missing.
          </p>
        ) : null}
        <p
          data-testid="compared-span"
          data-span-start-ms={comparison.span.startMs}
          data-span-end-ms={comparison.span.endMs}
        >
          {comparison.status === "not-started" ? (
            <>
              <NotStartedWords span={comparison.span} />.
            </>
          ) : (
            <>
              <ComparedSpanWords span={comparison.span} capitalized />: both totals count exactly
              these minutes
              {comparison.status === "no-traffic"
                ? ", and neither scope saw a request in them"
                : ""}
              .
            </>
          )}
        </p>
        <div className={styles.totals}>
          <Total testId="would-block-total" comparison={comparison} side="candidate">
            would be blocked by the candidate
          </Total>
          <Total testId="blocked-total" comparison={comparison} side="target">
            blocked by <code>{candidate.target}</code>
          </Total>
        </div>
        {countsDifference === null ? null : (
          <p className="muted small" data-testid="counts-difference">
            {countsDifference}
          </p>
        )}
        <DryRunChart
          data={data}
          markers={markers}
          compared={{ startMs: comparison.span.startMs, summary: evidence }}
          title="Blocked versus would-block, per minute"
        />
      </section>

      {can(principal.role, "candidate.write") ? (
        <section className="panel" aria-labelledby="tune-heading">
          <details>
            <summary>
              <h2 id="tune-heading" className={styles.inlineHeading}>
                Try other numbers
              </h2>
            </summary>
            <UpdateCandidateForm
              id={candidate.id}
              version={candidate.version}
              limit={candidate.limit}
            />
          </details>
        </section>
      ) : null}

      <section className="panel" aria-labelledby="decide-heading">
        <h2 id="decide-heading">Decide</h2>
        {candidate.sliceBasisPoints !== undefined ? (
          <p data-testid="candidate-staged">
            This candidate carries a staged change, now at {candidate.sliceBasisPoints / 100} % of
            subjects: steer it on{" "}
            <Link href={`/staged-changes/${encodeURIComponent(candidate.id)}`}>its page</Link>.
          </p>
        ) : (
          <CandidateActions
            id={candidate.id}
            version={candidate.version}
            promoteSummary={promoteSummary}
            evidence={evidence}
            canPromote={can(principal.role, "candidate.promote")}
            canDiscard={can(principal.role, "candidate.write")}
          />
        )}
      </section>
    </>
  );
}
