import { isOutboundRaiseActive } from "@limitplane/enforcer/policy";
import type { Metadata } from "next";
import Link from "next/link";
import { notFound } from "next/navigation";
import { connection } from "next/server";
import { Suspense } from "react";
import { OutboundCharts } from "@/components/charts/outbound-charts";
import { EmptyState } from "@/components/ui/empty-state";
import { ErrorState } from "@/components/ui/error-state";
import { SkeletonChart } from "@/components/ui/skeleton";
import { CHART_RANGES, chartWindow } from "@/lib/console/chart-series";
import { describeRaiseBanner, describeRaiseChanges } from "@/lib/console/outbound-raise";
import { buildOutboundSeries } from "@/lib/console/outbound-series";
import {
  can,
  getOutboundBudget,
  getPolicySettings,
  isAppError,
  listOutboundMinutes,
  type OutboundBudgetRecord,
} from "@/lib/control";
import { clock, controlDeps } from "@/lib/server/composition";
import { requirePrincipal } from "@/lib/server/current-principal";
import { describeRuleLimit } from "../../descriptor-rules/_components/describe-rule-limit";
import { DeleteOutboundBudget } from "../_components/delete-outbound-budget";
import { OutboundBudgetForm } from "../_components/outbound-budget-form";
import { RaiseOutboundBudgetForm } from "../_components/raise-outbound-budget-form";
import { RevertOutboundRaise } from "../_components/revert-outbound-raise";

export const metadata: Metadata = { title: "Outbound budget" };

/**
 * The budget's last hour, per minute, from the rolled-up `OutboundMinute` rows (a minute or so
 * behind: the worker rolls each minute up once it has ended).
 */
async function OutboundActivity({ name }: { name: string }) {
  const range = CHART_RANGES["1h"];
  const nowMs = clock().nowMs();
  try {
    const window = chartWindow(range, { nowMs });
    const rows = await listOutboundMinutes(
      { name, fromMs: window.startMs, toMs: window.endMs },
      controlDeps(),
    );
    const series = buildOutboundSeries(rows, window);
    if (series.isEmpty) {
      return (
        <div data-testid="outbound-activity">
          <EmptyState title="No calls recorded yet">
            No calls recorded yet: the panel fills once a worker using this budget reports. A worker
            reports when its outbound limiter is created with the <code>metrics</code> option (see
            the callers guide); each minute appears here once it has ended.
          </EmptyState>
        </div>
      );
    }
    return (
      <div data-testid="outbound-activity">
        <OutboundCharts series={series} />
      </div>
    );
  } catch (error: unknown) {
    console.error("outbound budget: the charts could not be built", error);
    return (
      <ErrorState
        title="The charts could not be drawn"
        message="The per-minute figures could not be read just now. Reload the page to try again."
        retryHref={`/outbound-budgets/${encodeURIComponent(name)}`}
      />
    );
  }
}

export default async function OutboundBudgetPage({
  params,
}: {
  params: Promise<{ name: string }>;
}) {
  const { name } = await params;
  const principal = await requirePrincipal("policy.read", {
    next: `/outbound-budgets/${encodeURIComponent(name)}`,
  });
  await connection();
  let budget: OutboundBudgetRecord;
  try {
    budget = await getOutboundBudget(name, controlDeps());
  } catch (error: unknown) {
    if (isAppError(error) && error.code === "NOT_FOUND") notFound();
    throw error;
  }
  const canWrite = can(principal.role, "outbound-budget.write");
  const canRaise = can(principal.role, "outbound-budget.raise");
  const nowMs = clock().nowMs();
  const raise =
    budget.raise !== null && isOutboundRaiseActive(budget.raise, nowMs) ? budget.raise : null;
  const { guardrails } =
    canRaise && raise === null ? await getPolicySettings(controlDeps()) : { guardrails: null };
  return (
    <>
      <header className="page-header">
        <p>
          <Link href="/outbound-budgets">Outbound budgets</Link>
        </p>
        <h1>
          <code>outbound:{budget.name}</code>
        </h1>
        {budget.displayName === null ? null : <p>{budget.displayName}</p>}
      </header>
      {raise === null ? null : (
        <section className="panel notice" aria-labelledby="raise-banner" data-testid="raise-banner">
          <p id="raise-banner">
            <strong>{describeRaiseBanner(raise, nowMs)}</strong>
          </p>
          <ul>
            {describeRaiseChanges(budget, raise).map((line) => (
              <li key={line}>{line}</li>
            ))}
          </ul>
          <p className="muted small">
            Every enforcer applies the raised numbers until{" "}
            <time dateTime={raise.expiresAt}>{raise.expiresAt}</time> by its own clock, then the
            budget's own below.
          </p>
          {canRaise ? <RevertOutboundRaise name={budget.name} version={budget.version} /> : null}
        </section>
      )}
      <section className="panel" aria-labelledby="budget-heading">
        <h2 id="budget-heading">
          {raise === null ? "In force" : "The budget's own (after the raise)"}
        </h2>
        <dl data-testid="budget-summary">
          <dt>Limit</dt>
          <dd>{budget.limit === null ? "none" : describeRuleLimit(budget.limit)}</dd>
          <dt>In flight</dt>
          <dd>
            {budget.concurrency === null
              ? "no cap"
              : `at most ${budget.concurrency.max}, a slot lapsing ${budget.concurrency.slotTtlMs} ms after its last renewal`}
          </dd>
          <dt>Longest wait</dt>
          <dd>{budget.maxWaitMs} ms</dd>
          <dt>Key</dt>
          <dd>{budget.keyBy}</dd>
          <dt>Version</dt>
          <dd>{budget.version}</dd>
        </dl>
      </section>
      {canRaise && raise === null && guardrails !== null ? (
        <section className="panel" aria-labelledby="raise-heading">
          <h2 id="raise-heading">Raise for a while</h2>
          <p className="muted">
            When a provider raises (or cuts) your quota for a while: the numbers below apply until
            the end of the raise, then the budget's own again, without another change. Bounded by
            the incident guardrails.
          </p>
          <RaiseOutboundBudgetForm
            key={budget.version}
            name={budget.name}
            limit={budget.limit}
            concurrency={budget.concurrency}
            guardrails={guardrails}
          />
        </section>
      ) : null}
      <section className="panel" aria-labelledby="activity-heading">
        <h2 id="activity-heading">Last hour, per minute</h2>
        <Suspense fallback={<SkeletonChart height={180} label="Loading the budget's charts" />}>
          <OutboundActivity name={budget.name} />
        </Suspense>
      </section>
      {canWrite ? (
        <>
          <section className="panel" aria-labelledby="edit-heading">
            <h2 id="edit-heading">Edit</h2>
            <OutboundBudgetForm key={budget.version} budget={budget} />
          </section>
          <section className="panel" aria-labelledby="delete-heading">
            <h2 id="delete-heading">Delete</h2>
            <DeleteOutboundBudget name={budget.name} version={budget.version} />
          </section>
        </>
      ) : null}
    </>
  );
}
