import Link from "next/link";
import { CountAndRateCells } from "@/components/rejected/rejection-columns";
import { Sparkline } from "@/components/rejected/sparkline";
import { ScrollRegion } from "@/components/ui/scroll-region";
import { limitPageOf } from "@/lib/console/limit-page";
import type { RejectedAnonymousRecord } from "@/lib/control";
import { describeScope } from "../policies/_components/policy-words";

export interface RejectedAnonymousTableProps {
  /** The limits that rejected requests without a customer, the most rejected first. */
  readonly limits: readonly RejectedAnonymousRecord[];
  /** "last hour", "last 15 minutes": said in the caption and the sparklines' labels. */
  readonly spanWords: string;
  /** The viewer may edit the limits (an admin): the link says "Change", else "View". */
  readonly canChange: boolean;
  /** The viewer may create dry-run candidates: a looser limit can be tried first. */
  readonly canTryDryRun: boolean;
}

/**
 * Requests without a customer that were rejected, ranked per limit (the gateways count them per
 * limit, never per address). No customer can be raised: what helps is the limit itself, so each
 * row links to it, and to a dry-run of a looser one.
 */
export function RejectedAnonymousTable({
  limits,
  spanWords,
  canChange,
  canTryDryRun,
}: RejectedAnonymousTableProps) {
  return (
    <ScrollRegion className="table-scroll" label="Rejected anonymous traffic">
      <table className="data" data-testid="rejected-anonymous">
        <caption className="visually-hidden">
          Requests without a customer rejected, per limit, {spanWords}
        </caption>
        <thead>
          <tr>
            <th scope="col">Anonymous traffic</th>
            <th scope="col">Rejected</th>
            <th scope="col">Rate</th>
            <th scope="col">Trend</th>
            <th scope="col">What to do</th>
          </tr>
        </thead>
        <tbody>
          {limits.map((limit) => {
            const page = limitPageOf(limit.scope);
            return (
              <tr key={limit.scope} data-testid="rejected-anonymous-row">
                <th scope="row" data-label="Anonymous traffic">
                  {describeScope(limit.scope)} <code className="muted small">{limit.scope}</code>
                </th>
                <CountAndRateCells
                  rejected={limit.rejected}
                  rejectedPerMinute={limit.rejectedPerMinute}
                />
                <td data-label="Trend">
                  <Sparkline values={limit.sparkline} label={`Rejections, ${spanWords}`} />
                </td>
                <td data-label="What to do">
                  {page === null ? (
                    <span className="muted small">No page for this limit</span>
                  ) : (
                    <>
                      <Link href={page.href}>
                        {canChange ? "Change" : "View"} {page.words}
                      </Link>
                      {canTryDryRun && page.isDryRunTarget ? (
                        <>
                          {" · "}
                          <Link href={`/dry-run?target=${encodeURIComponent(limit.scope)}`}>
                            Try a looser limit in dry-run
                          </Link>
                        </>
                      ) : null}
                    </>
                  )}
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </ScrollRegion>
  );
}
