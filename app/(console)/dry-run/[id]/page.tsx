import { isRecordId, limitAtScope } from "@limitplane/enforcer/policy";
import type { Metadata } from "next";
import Link from "next/link";
import { notFound } from "next/navigation";
import { AutoRefresh } from "@/components/auto-refresh";
import { DryRunChart } from "@/components/charts/dry-run-chart";
import { LocalTime } from "@/components/ui/local-time";
import {
  buildDryRunSeries,
  CHART_RANGES,
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
  readScopeCounts,
} from "@/lib/control";
import { requirePrincipal } from "@/lib/control/auth/current-principal";
import { clock } from "@/lib/server/composition";
import { describePolicyLimit, describeScope } from "../../policies/_components/policy-words";
import { CandidateActions } from "../_components/candidate-actions";
import { UpdateCandidateForm } from "../_components/update-candidate-form";
import styles from "../dry-run.module.css";

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
  const candidate = await getCandidate(id).catch((error: unknown) => {
    if (isAppError(error) && error.code === "NOT_FOUND") return null;
    throw error;
  });
  if (candidate === null) notFound();
  const [tiers, endpointClasses, settings] = await Promise.all([
    listTiers(),
    listEndpointClasses(),
    getPolicySettings(),
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
  const dryRunScope = `candidate:${candidate.id}`;
  const nowMs = clock().nowMs();
  const counts = await readScopeCounts({
    scopes: [candidate.target, dryRunScope],
    fromMs: nowMs - range.rangeMs - range.bucketMs,
    toMs: nowMs + range.bucketMs,
    nowMs,
  });
  const data = buildDryRunSeries(counts.rows, range, {
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
  const series = data.series[0];
  const wouldBlock = series?.totalWouldBlock ?? 0;
  const dryRunRequests = series?.dryRunRequests ?? 0;
  const promoteSummary =
    current === null
      ? `Enforce ${formatLimit(candidate.limit)} as a new limit on ${candidate.target} (${describeScope(candidate.target)}).`
      : `Enforce ${formatLimit(candidate.limit)} on ${candidate.target} (${describeScope(candidate.target)}) instead of ${formatLimit(current)}.`;
  const evidence =
    dryRunRequests === 0
      ? `${range.label}: it has seen no traffic, so there is no evidence yet of what it would block.`
      : `${range.label}: it would have blocked ${formatNumber(wouldBlock)} of ${formatNumber(dryRunRequests)} requests (${formatPercent(series?.wouldBlockRate ?? null)}).`;

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
        {!counts.isLive ? (
          <p className="notice" role="status">
            Redis cannot be read: the last few minutes are missing.
          </p>
        ) : null}
        <div className={styles.totals}>
          <div className={styles.total}>
            <span className={styles.totalValue} data-testid="would-block-total">
              {formatNumber(wouldBlock)}
            </span>
            <span className="small">
              would be blocked by the candidate, of {formatNumber(dryRunRequests)} it saw
            </span>
          </div>
          <div className={styles.total}>
            <span className={styles.totalValue} data-testid="blocked-total">
              {formatNumber(series?.totalBlocked ?? 0)}
            </span>
            <span className="small">
              blocked by <code>{candidate.target}</code>, of{" "}
              {formatNumber(series?.enforcedRequests ?? 0)}
            </span>
          </div>
        </div>
        <DryRunChart data={data} title="Blocked versus would-block, per minute" />
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
        <CandidateActions
          id={candidate.id}
          version={candidate.version}
          promoteSummary={promoteSummary}
          evidence={evidence}
          canPromote={can(principal.role, "candidate.promote")}
          canDiscard={can(principal.role, "candidate.write")}
        />
      </section>
    </>
  );
}
