import Link from "next/link";
import styles from "@/components/ops/ops.module.css";
import { Badge } from "@/components/ui/badge";
import { EmptyState } from "@/components/ui/empty-state";
import { LocalTime } from "@/components/ui/local-time";
import { isAppError, listSeenCustomers, type SeenCustomerPage } from "@/lib/control";
import { seenCustomerDeps } from "@/lib/server/composition";

/**
 * Customers the gateways report that the registry does not hold, matching the registry search's
 * `q` on the start of the id. Their tier is what the gateways sent: shown as reported, never as
 * policy. Redis unreachable: said in one line, the registry's results stand.
 */
export async function SeenCustomersPanel({ q }: { q: string | undefined }) {
  let page: SeenCustomerPage | null = null;
  let problem: string | null = null;
  try {
    page = await listSeenCustomers({ search: q, limit: 25 }, seenCustomerDeps());
  } catch (error: unknown) {
    if (isAppError(error) && error.code === "VALIDATION_FAILED") return null;
    problem = error instanceof Error ? error.message : "Redis did not answer";
  }
  return (
    <section className="panel" aria-labelledby="seen-customers-heading">
      <h2 id="seen-customers-heading">Seen by gateways, not in the registry</h2>
      <p className="muted small">
        Customers the gateways identified in the last 7 days (each gateway reports at most 1,000 an
        hour). Their page shows the limits in effect; raising a limit or adding an override
        registers them.
      </p>
      {problem !== null ? (
        <p className="muted" role="status">
          The gateways' reports could not be read from Redis: {problem}
        </p>
      ) : page === null ? null : page.customers.length === 0 ? (
        <EmptyState
          title={
            q === undefined
              ? "Every customer the gateways report is in the registry"
              : `No unregistered customer seen by gateways matches “${q}”`
          }
        />
      ) : (
        <div className={styles.tableScroll}>
          <table className="data" data-testid="seen-customers">
            <thead>
              <tr>
                <th scope="col">Customer</th>
                <th scope="col">Tier reported by gateways</th>
                <th scope="col">Last seen</th>
              </tr>
            </thead>
            <tbody>
              {page.customers.map((customer) => (
                <tr key={customer.id} data-testid="seen-customer-row">
                  <td>
                    <Link href={`/customers/${encodeURIComponent(customer.id)}`} className="mono">
                      {customer.id}
                    </Link>
                  </td>
                  <td>
                    {customer.reportedTier === null ? (
                      <span className="muted">none (default tier)</span>
                    ) : (
                      <Badge tone="muted">{customer.reportedTier}</Badge>
                    )}
                  </td>
                  <td>
                    <LocalTime at={customer.lastSeenAt} relative />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {page?.hasMore === true ? (
        <p className="muted small">More match: type more of the identifier.</p>
      ) : null}
      {page !== null && page.unreported.total > 0 ? (
        <p className="small" role="status" data-testid="seen-unreported">
          <Badge tone="warn">capped</Badge> {page.unreported.total.toLocaleString("en-US")}{" "}
          sightings went unreported in the last two hours: {page.unreported.enforcers} gateway
          {page.unreported.enforcers === 1 ? "" : "s"} reached the cap of customers an hour (many or
          hostile API keys).
        </p>
      ) : null}
    </section>
  );
}
