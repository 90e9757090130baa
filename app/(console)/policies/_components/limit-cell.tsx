import type { TPolicyLimit } from "@limitplane/enforcer/policy";
import { Badge } from "@/components/ui/badge";
import { describePolicyLimit, ON_STORE_FAILURE_WORDS } from "./policy-words";

/** A limit in a table cell: what it allows, then its mode when not enforced and its failure policy. */
export function LimitCell({ limit }: { limit: TPolicyLimit | null }) {
  if (limit === null) return <span className="muted">none</span>;
  return (
    <span>
      {describePolicyLimit(limit)}
      {limit.mode !== "enforce" ? (
        <>
          {" "}
          <Badge tone={limit.mode === "dry-run" ? "info" : "warn"}>{limit.mode}</Badge>
        </>
      ) : null}
      <br />
      <span className="muted small">
        Redis down: {ON_STORE_FAILURE_WORDS[limit.onStoreFailure]}
      </span>
    </span>
  );
}
