import { Badge } from "@/components/ui/badge";
import { formatNumber } from "@/lib/console";
import { readPolicyRollout } from "@/lib/control";
import { clock, fleetDeps } from "@/lib/server/composition";

/**
 * How many live enforcers run `version` or later, from their heartbeats: "2 of 2 enforcers run
 * it". Unknown when Redis cannot be read; none live is said as such, never as "0 of 0".
 */
export async function RolloutLine({ version }: { version: number }) {
  const rollout = await readPolicyRollout({ version, nowMs: clock().nowMs() }, fleetDeps());
  if (rollout === null) {
    return <span className="muted">Which enforcers run it is unknown: Redis cannot be read.</span>;
  }
  if (rollout.liveEnforcers === 0) {
    return <span className="muted">No enforcer has sent a heartbeat in the last 10 s.</span>;
  }
  const isDone = rollout.atVersion === rollout.liveEnforcers;
  return (
    <span
      data-testid="rollout"
      data-at-version={rollout.atVersion}
      data-live={rollout.liveEnforcers}
    >
      <Badge tone={isDone ? "ok" : "warn"} dot>
        {formatNumber(rollout.atVersion)} of {formatNumber(rollout.liveEnforcers)} enforcers
      </Badge>{" "}
      {isDone
        ? "run it."
        : `run it; still behind: ${rollout.behind
            .slice(0, 5)
            .map(
              (enforcer) =>
                `${enforcer.enforcerId} (${enforcer.version === null ? "no policy" : `v${enforcer.version}`})`,
            )
            .join(", ")}${rollout.behind.length > 5 ? ", …" : ""}.`}
    </span>
  );
}
