"use client";

import { formatNumber } from "@/lib/console/format";
import type { BacktestResult } from "@/lib/control";
import { EmptyState } from "../ui/empty-state";
import { LocalTime } from "../ui/local-time";
import { ScrollRegion } from "../ui/scroll-region";
import styles from "./backtest.module.css";
import { BacktestChart } from "./backtest-chart";
import {
  type BacktestFocus,
  backtestFigures,
  describeBacktestHeadline,
  describeBacktestTrust,
  describeBinding,
  describeEmptyBacktest,
  formatRequestCount,
  isSampled,
  toBacktestChartData,
} from "./backtest-words";

/**
 * One backtest's result: the headline, the figures behind it, admitted and rejected over time
 * (now against the draft), the most affected customers with their changed outcomes and binding
 * scopes, and how far to trust it. An empty record says so, and why.
 */
export function BacktestSummary({
  result,
  focus,
  windowMs,
}: {
  result: BacktestResult;
  focus: BacktestFocus;
  windowMs: number;
}) {
  if (result.isEmpty) {
    return (
      <div data-testid="backtest-empty">
        <EmptyState title="No recorded traffic to replay">
          {describeEmptyBacktest(result, windowMs)}
        </EmptyState>
      </div>
    );
  }
  const figures = backtestFigures(result, focus);
  const estimate = isSampled(result);
  const count = (value: number) => formatRequestCount(value, estimate);
  return (
    <div className={styles.summary} data-testid="backtest-result">
      <p className={styles.headline} data-testid="backtest-headline">
        {describeBacktestHeadline(result, focus, windowMs)}
      </p>
      <dl className={`facts ${styles.figures}`}>
        {figures.hasRequests ? (
          <>
            <dt>{figures.requestsLabel}</dt>
            <dd data-testid="backtest-requests">{count(figures.requests)}</dd>
          </>
        ) : null}
        {focus.kind !== "customer" && figures.hasRequests ? (
          <>
            <dt>Rejected now</dt>
            <dd data-testid="backtest-now-rejected">{count(figures.nowRejected)}</dd>
            <dt>Rejected under the draft</dt>
            <dd data-testid="backtest-draft-rejected">{count(figures.draftRejected)}</dd>
          </>
        ) : null}
        <dt>Admitted now, rejected under the draft</dt>
        <dd data-testid="backtest-more-rejected">{count(figures.moreRejected)}</dd>
        <dt>Rejected now, admitted under the draft</dt>
        <dd data-testid="backtest-more-admitted">{count(figures.moreAdmitted)}</dd>
        {focus.kind !== "customer" ? (
          <>
            <dt>Customers affected</dt>
            <dd data-testid="backtest-customers-affected">
              {formatNumber(figures.customersAffected)}
            </dd>
          </>
        ) : null}
      </dl>

      <BacktestChart data={toBacktestChartData(result.minutes)} />

      {result.mostAffected.length > 0 ? (
        <ScrollRegion label="Most affected callers">
          <table className="data" data-testid="backtest-most-affected">
            <caption className="small">
              Most affected ({formatNumber(result.subjectsAffected)} caller
              {result.subjectsAffected === 1 ? "" : "s"} change outcome)
            </caption>
            <thead>
              <tr>
                <th scope="col">Customer</th>
                <th scope="col">Requests</th>
                <th scope="col">More rejected</th>
                <th scope="col">More admitted</th>
                <th scope="col">Binds now</th>
                <th scope="col">Binds under the draft</th>
              </tr>
            </thead>
            <tbody>
              {result.mostAffected.map((entry) => (
                <tr key={entry.subject} data-testid="backtest-affected-row">
                  <th scope="row">
                    {entry.customerId === null ? (
                      <span>
                        anonymous <span className="muted small">(address hash)</span>
                      </span>
                    ) : (
                      <a href={`/customers/${encodeURIComponent(entry.customerId)}`}>
                        <code>{entry.customerId}</code>
                      </a>
                    )}
                    {entry.tier === null ? null : (
                      <span className="muted small"> tier {entry.tier}</span>
                    )}
                  </th>
                  <td>{count(entry.requests)}</td>
                  <td data-testid="affected-more-rejected">{count(entry.moreRejected)}</td>
                  <td data-testid="affected-more-admitted">{count(entry.moreAdmitted)}</td>
                  <td>
                    <code>{describeBinding(entry.bindingNow)}</code>
                  </td>
                  <td>
                    <code>{describeBinding(entry.bindingDraft)}</code>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </ScrollRegion>
      ) : null}

      <section
        className={styles.trust}
        aria-label="How far to trust this"
        data-testid="backtest-trust"
      >
        <p className="small">
          <strong>How far to trust this.</strong> Replayed from{" "}
          <LocalTime at={result.span.fromMs} short /> to <LocalTime at={result.span.toMs} short />{" "}
          under policy version {result.policyVersion}.{" "}
          {describeBacktestTrust(result).map((line) => (
            <span key={line.key} data-testid={`backtest-trust-${line.key}`}>
              {line.text}{" "}
            </span>
          ))}
        </p>
        {result.trust.gaps.length > 0 ? (
          <ul className="small" data-testid="backtest-gaps">
            {result.trust.gaps.map((gap) => (
              <li key={`${gap.gatewayId}-${gap.fromMs}`}>
                <code>{gap.gatewayId}</code>: <LocalTime at={gap.fromMs} short /> to{" "}
                <LocalTime at={gap.toMs} short />,{" "}
                {gap.reason === "buffer-full"
                  ? `${gap.requests === null ? "some" : formatNumber(gap.requests)} requests dropped by a full buffer`
                  : "trimmed from the stream before the worker moved it"}
              </li>
            ))}
          </ul>
        ) : null}
        {result.trust.withoutStore > 0 ? (
          <p className="small">
            {formatNumber(result.trust.withoutStore)} requests were decided without Redis: replayed,
            but not part of the fidelity check.
          </p>
        ) : null}
      </section>
    </div>
  );
}
