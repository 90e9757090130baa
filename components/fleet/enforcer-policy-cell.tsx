import type { EnforcerHeartbeat } from "@limitplane/enforcer/publication";
import { Badge } from "@/components/ui/badge";
import { LocalTime } from "@/components/ui/local-time";

export type EnforcerPolicyReport = Pick<EnforcerHeartbeat, "version" | "noPolicy" | "cachedPolicy">;

/**
 * The policy a gateway runs, as the fleet table shows it: its version; "no policy" with what it
 * does meanwhile; or "cached" while the version is the last good policy saved on its disk (the
 * gateway started without Redis's), with when that was saved.
 */
export function EnforcerPolicyCell({ enforcer }: { enforcer: EnforcerPolicyReport }) {
  if (enforcer.version === null) {
    return (
      <>
        <Badge tone="bad">no policy</Badge>
        {enforcer.noPolicy !== null ? (
          <span className="muted small" data-testid="no-policy-cell">
            {" "}
            {enforcer.noPolicy.action === "reject" ? "refusing" : "admitting"} all ·{" "}
            {enforcer.noPolicy.decisions} so far
          </span>
        ) : null}
      </>
    );
  }
  if (enforcer.cachedPolicy === null) return <>{`v${enforcer.version}`}</>;
  return (
    <>
      {`v${enforcer.version}`} <Badge tone="warn">cached</Badge>
      {enforcer.cachedPolicy.savedAtMs !== null ? (
        <span className="muted small" data-testid="cached-policy-cell">
          {" "}
          saved <LocalTime at={enforcer.cachedPolicy.savedAtMs} />
        </span>
      ) : null}
    </>
  );
}
