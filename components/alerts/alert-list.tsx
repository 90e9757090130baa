import { formatPercent, formatRateChange } from "@/lib/console/format";
import type { ConsoleAlert } from "@/lib/control";
import { Badge } from "../ui/badge";
import { Countdown } from "../ui/countdown";

export interface AlertListProps {
  /** From `detectRejectionRateAlerts` and `detectExpiringIncidents`, in the order to show. */
  alerts: readonly ConsoleAlert[];
  /** The server's clock, so countdowns render the same on server and client. */
  nowMs: number;
  /**
   * Where an incident alert links, to extend or revert the override.
   * @default `/overrides?incident=<id>` (the Overrides area)
   */
  incidentHref?: (incidentId: string) => string;
  /**
   * Whether the viewer may change incidents: the link then offers to extend or revert, else only
   * to view the override.
   * @default true
   */
  canChange?: boolean;
}

function defaultIncidentHref(incidentId: string): string {
  return `/overrides?incident=${encodeURIComponent(incidentId)}`;
}

/**
 * The overview's alerts, each in words with its numbers: rejection-rate changes (from, to, the
 * change in points) and incident overrides about to expire (with a live countdown). Nothing at all
 * when there are none; the page says "no alerts" if it wants to.
 */
export function AlertList({
  alerts,
  nowMs,
  incidentHref = defaultIncidentHref,
  canChange = true,
}: AlertListProps) {
  if (alerts.length === 0) return null;
  return (
    <ul className="alert-list" aria-label="Alerts">
      {alerts.map((alert) =>
        alert.kind === "no-policy" ? (
          <li key={alert.key} className="alert-item alert-item-rise" data-testid="no-policy-alert">
            <Badge tone="bad">no policy</Badge>
            <span className="muted small">{alert.message}</span>
          </li>
        ) : alert.kind === "degraded-decisions" ? (
          <li key={alert.key} className="alert-item alert-item-rise">
            <Badge tone="bad">decided without Redis</Badge>
            <span>
              {alert.decisionsWithoutStore} of {alert.decisions} ({formatPercent(alert.share)})
            </span>
            <span className="muted small">{alert.message}</span>
          </li>
        ) : alert.kind === "staged-change" ? (
          <li key={alert.key} className="alert-item alert-item-rise">
            <Badge tone={alert.event === "reverted" ? "bad" : "warn"}>
              {alert.event === "reverted" ? "staged change reverted" : "staged change holding"}
            </Badge>
            <code>{alert.target}</code>
            <a href={`/staged-changes/${alert.stagedChangeId}`}>{alert.stagedChangeId}</a>
            <span className="muted small">{alert.message}</span>
          </li>
        ) : alert.kind === "rejection-rate-change" ? (
          <li key={alert.key} className={`alert-item alert-item-${alert.direction}`}>
            <Badge tone={alert.direction === "rise" ? "bad" : "warn"}>
              rejections {alert.direction === "rise" ? "up" : "down"}
            </Badge>
            <code>{alert.scope}</code>
            <span>
              {formatPercent(alert.baselineRate)} → {formatPercent(alert.recentRate)} (
              {formatRateChange(alert.absoluteChange)})
            </span>
            <span className="muted small">{alert.message}</span>
          </li>
        ) : (
          <li key={alert.key} className="alert-item">
            <Badge tone="warn">override expiring</Badge>
            <code>{alert.scope}</code>
            <span>
              for <code>{alert.customerId}</code>
              {alert.endpointClass === null ? " (all endpoints)" : ` on ${alert.endpointClass}`}:{" "}
              <Countdown expiresAt={alert.expiresAtMs} serverNowMs={nowMs} />
            </span>
            <a href={incidentHref(alert.incidentId)}>
              {canChange ? "Extend or revert" : "View the override"}
            </a>
          </li>
        ),
      )}
    </ul>
  );
}
