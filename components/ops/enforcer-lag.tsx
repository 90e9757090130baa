import { Badge } from "@/components/ui/badge";
import { LocalTime } from "@/components/ui/local-time";
import {
  describeEnforcerLag,
  type EnforcerVersionFacts,
  formatDurationMs,
  type PublishedVersionFacts,
} from "@/lib/console";

/**
 * The fleet table's lag cell: a lag only for an enforcer that was running when the version was
 * published; one that started later says when it started and which version it loaded
 * (lib/console/fleet-lag.ts decides which).
 */
export function EnforcerLagCell({
  enforcer,
  published,
  nowMs,
}: {
  enforcer: EnforcerVersionFacts;
  published: PublishedVersionFacts | null;
  nowMs: number;
}) {
  const lag = describeEnforcerLag(enforcer, published, nowMs);
  switch (lag.kind) {
    case "unknown":
      return <span className="muted">unknown</span>;
    case "behind":
      return (
        <>
          <Badge tone="bad" dot>
            {lag.versionsBehind} {lag.versionsBehind === 1 ? "version" : "versions"} behind
          </Badge>
          {lag.forMs !== null ? (
            <span className="muted small"> for {formatDurationMs(lag.forMs)}</span>
          ) : null}
        </>
      );
    case "applied":
      return (
        <>
          <Badge tone="ok" dot>
            current
          </Badge>
          <span className="muted small">
            {" "}
            applied {formatDurationMs(lag.lagMs)} after publication
          </span>
        </>
      );
    case "loaded-at-start":
      return (
        <>
          <Badge tone="ok" dot>
            current
          </Badge>
          <span className="muted small" data-testid="loaded-at-start">
            {" "}
            {lag.startedAtMs === null ? (
              "started later"
            ) : (
              <>
                started <LocalTime at={lag.startedAtMs} relative />
              </>
            )}
            , loaded v{lag.version}
          </span>
        </>
      );
    case "current":
      return (
        <Badge tone="ok" dot>
          current
        </Badge>
      );
  }
}
