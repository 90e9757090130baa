import { Badge } from "@/components/ui/badge";

/** What a heartbeat says about decisions made without Redis (`EnforcerHeartbeat`). */
export interface DegradedReport {
  readonly id: string;
  readonly breakerState: string | null;
  readonly decisionsWithoutStore: {
    readonly storeError: number;
    readonly timeout: number;
    readonly circuitOpen: number;
  };
}

/** Decisions the enforcer made without Redis since it started. */
export function degradedTotal(report: DegradedReport): number {
  const { storeError, timeout, circuitOpen } = report.decisionsWithoutStore;
  return storeError + timeout + circuitOpen;
}

const count = (value: number) => value.toLocaleString("en-US");

/**
 * One gateway's decisions without Redis, by why, for the fleet tables: none, or how many (each was
 * decided by its limits' failure policies), and whether its breaker is open right now (it is then
 * deciding every request without Redis).
 */
export function DegradedCell({ report }: { report: DegradedReport }) {
  const total = degradedTotal(report);
  const isOpen = report.breakerState === "open";
  if (total === 0 && !isOpen) return <span className="muted">none</span>;
  const { storeError, timeout, circuitOpen } = report.decisionsWithoutStore;
  const parts = [
    storeError > 0 ? `${count(storeError)} Redis down or refusing` : null,
    timeout > 0 ? `${count(timeout)} no answer in time` : null,
    circuitOpen > 0 ? `${count(circuitOpen)} breaker open` : null,
  ].filter((part) => part !== null);
  return (
    <span data-testid="degraded-decisions" data-count={total}>
      {isOpen ? (
        <>
          <Badge tone="bad" dot>
            deciding without Redis now
          </Badge>{" "}
        </>
      ) : null}
      {total > 0 ? (
        <>
          <Badge tone={isOpen ? "bad" : "warn"}>{count(total)} since start</Badge>
          <span className="muted small"> ({parts.join(", ")})</span>
        </>
      ) : null}
    </span>
  );
}

/**
 * Above the fleet table: how many gateways decided without Redis, and the alert when the worker
 * raised one (10 or more and 1 % or more of the fleet's decisions over the last two minutes).
 */
export function FleetDegradedSummary({
  reports,
  alert,
}: {
  reports: readonly DegradedReport[];
  alert: { readonly decisionsWithoutStore: number; readonly share: number } | null;
}) {
  const degraded = reports.filter(
    (report) => degradedTotal(report) > 0 || report.breakerState === "open",
  );
  if (degraded.length === 0 && alert === null) return null;
  const open = reports.filter((report) => report.breakerState === "open").length;
  return (
    <div role="status" data-testid="fleet-degraded">
      {alert !== null ? (
        <p>
          <Badge tone="bad" dot>
            alert
          </Badge>{" "}
          <strong>Decisions without Redis:</strong> {count(alert.decisionsWithoutStore)} in the last
          two minutes ({(alert.share * 100).toFixed(1)} % of the fleet&apos;s), each decided by its
          limits&apos; failure policies.
        </p>
      ) : null}
      <p className="small">
        {degraded.length} of {reports.length}{" "}
        {reports.length === 1 ? "gateway has" : "gateways have"} decided without Redis since they
        started
        {open > 0 ? `; ${open} ${open === 1 ? "is" : "are"} doing so now (breaker open)` : ""}.
      </p>
    </div>
  );
}
