import type { TraceRule, TraceStatus } from "@limitplane/enforcer/policy";
import { Badge, type BadgeTone } from "@/components/ui/badge";
import { Countdown } from "@/components/ui/countdown";
import { formatDurationMs, formatFactor, formatLimit, formatNumber } from "@/lib/console";
import type { Explanation } from "@/lib/control";
import { ScrollRegion } from "../ui/scroll-region";
import styles from "./ops.module.css";

const STATUS: Record<TraceStatus, { label: string; tone: BadgeTone }> = {
  applies: { label: "applies", tone: "ok" },
  "dry-run": { label: "dry-run", tone: "info" },
  replaced: { label: "replaced", tone: "muted" },
  superseded: { label: "superseded", tone: "muted" },
  off: { label: "off", tone: "muted" },
  expired: { label: "expired", tone: "muted" },
  "not-started": { label: "not started", tone: "warn" },
  "nothing-to-scale": { label: "nothing to scale", tone: "warn" },
};

const SOURCE: Record<TraceRule["source"], string> = {
  tier: "tier",
  "customer-override": "customer override",
  "incident-override": "incident override",
  ceiling: "ceiling",
  address: "per address",
  candidate: "dry-run candidate",
};

/** "next request leaves 12 of 20, full in 4 s", from a peek; nothing consumed. */
function describeLive(live: NonNullable<Explanation["checks"][number]["live"]>): string {
  const left = `next request leaves ${formatNumber(live.remaining)} of ${formatNumber(live.limit)}`;
  if (!live.allowed) {
    return `${left}; the next request is rejected (retry in ${formatDurationMs(live.retryAfterMs)})`;
  }
  return live.resetAfterMs > 0 ? `${left}, full in ${formatDurationMs(live.resetAfterMs)}` : left;
}

/**
 * One endpoint class's resolution for one customer: every layer, every rule considered, which one
 * applies (and whether it binds now), active incident overrides with their countdown, and the live
 * bucket state from a read-only peek.
 */
export function LimitsTrace({
  explanation,
  serverNowMs,
}: {
  explanation: Explanation;
  serverNowMs: number;
}) {
  const liveByBucket = new Map(
    explanation.checks.filter((check) => check.mode === "enforce").map((c) => [c.bucket, c]),
  );
  // A dry-run check runs on a bucket of its own, named by its rule's scope.
  const dryRunByScope = new Map(
    explanation.checks.filter((check) => check.mode === "dry-run").map((c) => [c.scope, c]),
  );
  const bindingScope = explanation.decision?.scope ?? null;
  return (
    <ScrollRegion className={styles.tableScroll} label="Limits in effect">
      {/* On a phone each rule is a card (ops.module.css, .stackOnPhone): no column off-screen. */}
      <table className={`data ${styles.stackOnPhone}`}>
        <thead>
          <tr>
            <th scope="col">Layer</th>
            <th scope="col">Rule</th>
            <th scope="col">Limit</th>
            <th scope="col">Status</th>
            <th scope="col">Live (peek)</th>
          </tr>
        </thead>
        <tbody>
          {explanation.trace.slots.map((slot) =>
            slot.rules.length === 0 ? (
              <tr key={slot.bucket}>
                <td className={styles.layer} data-label="Layer">
                  {slot.layer}
                </td>
                <td colSpan={4} className="muted">
                  no limit on this layer
                </td>
              </tr>
            ) : (
              slot.rules.map((rule, index) => {
                const check =
                  rule.status === "applies"
                    ? liveByBucket.get(slot.bucket)
                    : rule.status === "dry-run"
                      ? dryRunByScope.get(rule.scope)
                      : undefined;
                const isBinding = rule.status === "applies" && rule.scope === bindingScope;
                return (
                  <tr
                    key={`${slot.bucket}:${rule.scope}:${rule.status}`}
                    data-testid="trace-rule"
                    data-status={rule.status}
                  >
                    <td className={styles.layer} data-label="Layer">
                      {index === 0 ? slot.layer : ""}
                    </td>
                    <td data-label="Rule">
                      <code>{rule.scope}</code>
                      <div className="muted small">
                        {SOURCE[rule.source]}
                        {rule.incident?.factor != null
                          ? ` ${formatFactor(rule.incident.factor)}`
                          : ""}
                      </div>
                    </td>
                    <td data-label="Limit">
                      {rule.limit === null ? (
                        <span className="muted">none</span>
                      ) : (
                        formatLimit(rule.limit)
                      )}
                    </td>
                    <td data-label="Status">
                      <Badge tone={STATUS[rule.status].tone}>{STATUS[rule.status].label}</Badge>
                      {isBinding ? (
                        <>
                          {" "}
                          <Badge tone="warn" title="The tightest limit for the next request">
                            binds
                          </Badge>
                        </>
                      ) : null}
                      {rule.by !== null ? (
                        <div className="muted small">
                          by <code>{rule.by}</code>
                        </div>
                      ) : null}
                      {rule.incident !== null && rule.status === "applies" ? (
                        <div className="small">
                          <Countdown
                            expiresAt={rule.incident.expiresAt}
                            serverNowMs={serverNowMs}
                          />
                        </div>
                      ) : null}
                    </td>
                    <td data-label="Live (peek)">
                      {check === undefined ? (
                        <span className="muted">—</span>
                      ) : check.live === null ? (
                        <span className="muted">unknown</span>
                      ) : (
                        <span className={check.live.allowed ? "" : styles.binding}>
                          {describeLive(check.live)}
                        </span>
                      )}
                    </td>
                  </tr>
                );
              })
            ),
          )}
        </tbody>
      </table>
    </ScrollRegion>
  );
}
