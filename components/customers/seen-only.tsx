import { Badge } from "@/components/ui/badge";
import { LocalTime } from "@/components/ui/local-time";
import {
  type CustomerRecord,
  findSeenCustomer,
  getCustomer,
  isAppError,
  type SeenCustomerRecord,
} from "@/lib/control";
import { controlDeps, seenRedisDeps } from "@/lib/server/composition";

/** What the customer page shows of a customer: its registry row, or the gateways' report. */
export interface RegisteredOrSeen {
  /** Null: neither registered nor reported (the page is a 404). */
  readonly customer: Pick<CustomerRecord, "id" | "displayName" | "tier"> | null;
  /** Set when the customer is not in the registry but gateways report it. */
  readonly seen: SeenCustomerRecord | null;
}

/**
 * The registry's customer, else the one the gateways report (its tier the reported one, for
 * display; the limits are explained with it as gateways send it), else nothing.
 */
export async function findRegisteredOrSeen(id: string): Promise<RegisteredOrSeen> {
  try {
    return { customer: await getCustomer(id, controlDeps()), seen: null };
  } catch (error: unknown) {
    if (!isAppError(error)) throw error;
    if (error.code === "VALIDATION_FAILED") return { customer: null, seen: null };
    if (error.code !== "NOT_FOUND") throw error;
  }
  // Redis unreachable: as if not reported (the page says "not found", the registry being silent).
  const seen = await findSeenCustomer(id, seenRedisDeps()).catch(() => null);
  if (seen === null) return { customer: null, seen: null };
  return {
    customer: { id: seen.id, displayName: seen.id, tier: seen.reportedTier ?? "" },
    seen,
  };
}

/** The tier line of a seen-only customer: what gateways reported, said as such. */
export function SeenOnlyTier({ seen }: { seen: SeenCustomerRecord }) {
  return (
    <span data-testid="reported-tier">
      Tier{" "}
      {seen.reportedTier === null ? (
        <span className="muted">none sent (the default tier)</span>
      ) : (
        <Badge tone="muted">{seen.reportedTier}</Badge>
      )}{" "}
      <span className="muted small">reported by gateways</span>{" "}
      <Badge tone="warn">not in the registry</Badge>
    </span>
  );
}

/** Why this customer has no registry data, and what registering it takes. */
export function SeenOnlyNotice({
  seen,
  mayRaise,
}: {
  seen: SeenCustomerRecord;
  mayRaise: boolean;
}) {
  return (
    <section className="panel" aria-labelledby="seen-only-heading" data-testid="seen-only">
      <h2 id="seen-only-heading">Seen by gateways only</h2>
      <p>
        No one has registered this customer: the gateways identified it (last seen{" "}
        <LocalTime at={seen.lastSeenAt} relative />) and sent the tier shown above, which is not
        stored anywhere as policy. The limits below are the ones its requests get with that tier.
      </p>
      {seen.reportedTiers.length > 1 ? (
        <p className="small">
          Gateways reported several tiers:{" "}
          {seen.reportedTiers.map((entry, index) => (
            <span key={entry.tier ?? "-"}>
              {index > 0 ? ", " : ""}
              <code>{entry.tier ?? "none"}</code> (<LocalTime at={entry.lastSeenAt} relative />)
            </span>
          ))}
        </p>
      ) : null}
      <p className="muted small">
        {mayRaise
          ? "Raising a limit or adding an override registers it in the same change, audited, with the reported tier when the policy has it (else the default tier)."
          : "An operator who raises a limit for it registers it in the same change."}
      </p>
    </section>
  );
}
