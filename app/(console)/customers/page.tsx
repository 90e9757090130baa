import type { Metadata } from "next";
import Link from "next/link";
import { SeenCustomersPanel } from "@/components/customers/seen-customers-panel";
import { ForwardPager } from "@/components/ops/forward-pager";
import styles from "@/components/ops/ops.module.css";
import { hrefWith, type PageSearchParams, singleParam } from "@/components/ops/search-params";
import { RejectionCells, RejectionHeaders } from "@/components/rejected/rejection-columns";
import { Badge } from "@/components/ui/badge";
import { EmptyState } from "@/components/ui/empty-state";
import { ErrorState } from "@/components/ui/error-state";
import { ScrollRegion } from "@/components/ui/scroll-region";
import {
  type CustomerPage,
  isAppError,
  listCustomers,
  listRejectedCustomers,
  type RejectedCustomerRecord,
} from "@/lib/control";
import { can } from "@/lib/control/auth/roles";
import { controlDeps, rejectedCustomerDeps } from "@/lib/server/composition";
import { requirePrincipal } from "@/lib/server/current-principal";

export const metadata: Metadata = { title: "Customers" };

const PAGE_SIZE = 25;
/** The span of the rejection columns. */
const REJECTED_MINUTES = 60;
/** Most customers listed by rejections (the tally ranks; there is no further page). */
const MOST_REJECTED = 50;

/** A customer row: from the registry, or (sorted by rejections) from the gateways' tally. */
interface CustomerRow {
  readonly id: string;
  readonly displayName: string | null;
  readonly tier: string | null;
}

/**
 * The rejections of the listed customers, or null when Redis did not answer (the list still
 * shows; the columns say the counts are unavailable).
 */
async function rejectionsOf(
  customerIds: readonly string[],
): Promise<ReadonlyMap<string, RejectedCustomerRecord> | null> {
  if (customerIds.length === 0) return new Map();
  try {
    const page = await listRejectedCustomers(
      { minutes: REJECTED_MINUTES, customerIds: [...customerIds] },
      rejectedCustomerDeps(),
    );
    return new Map(page.customers.map((customer) => [customer.customerId, customer]));
  } catch (error: unknown) {
    console.error("customers: the rejection counts could not be read", error);
    return null;
  }
}

/** The most rejected customers, those matching `q` (the registry's rule: id start, any part of the name). */
async function mostRejected(q: string | undefined): Promise<RejectedCustomerRecord[] | null> {
  try {
    const page = await listRejectedCustomers(
      { minutes: REJECTED_MINUTES, limit: 200 },
      rejectedCustomerDeps(),
    );
    const needle = q?.toLowerCase();
    return page.customers
      .filter(
        (customer) =>
          needle === undefined ||
          customer.customerId.toLowerCase().startsWith(needle) ||
          customer.displayName?.toLowerCase().includes(needle) === true,
      )
      .slice(0, MOST_REJECTED);
  } catch (error: unknown) {
    console.error("customers: the most rejected customers could not be read", error);
    return null;
  }
}

export default async function CustomersPage({
  searchParams,
}: {
  searchParams: Promise<PageSearchParams>;
}) {
  const params = await searchParams;
  const q = singleParam(params, "q")?.trim() || undefined;
  const after = singleParam(params, "after");
  const isByRejections = singleParam(params, "sort") === "rejected";
  const sort = isByRejections ? "rejected" : undefined;
  const principal = await requirePrincipal("policy.read", {
    next: hrefWith("/customers", { q, after, sort }),
  });

  let page: CustomerPage | null = null;
  let problem: string | null = null;
  try {
    page = await listCustomers({ search: q, after, limit: PAGE_SIZE }, controlDeps());
  } catch (error: unknown) {
    if (!isAppError(error) || error.code !== "VALIDATION_FAILED") throw error;
    problem = error.fieldErrors.map((field) => field.message).join("; ") || error.message;
  }
  // Sorted by rejections the rows come from the gateways' tally (the search's rule applied);
  // otherwise from the registry, in its order, with their rejections beside them.
  const ranked = isByRejections && problem === null ? await mostRejected(q) : null;
  const rows: readonly CustomerRow[] | null =
    ranked !== null
      ? ranked.map((customer) => ({
          id: customer.customerId,
          displayName: customer.displayName,
          tier: customer.tier,
        }))
      : isByRejections || page === null
        ? null
        : page.customers;
  const rejections =
    ranked !== null
      ? new Map(ranked.map((customer) => [customer.customerId, customer]))
      : await rejectionsOf(rows?.map((row) => row.id) ?? []);

  return (
    <>
      <header className="page-header">
        <div className={styles.headerRow}>
          <div>
            <h1>Customers</h1>
            <p>
              Find a customer by identifier (its start) or name (any part), then see the limits in
              effect for each endpoint, why, and its recent rejections.
            </p>
          </div>
          {can(principal.role, "incident.write") ? (
            <Link className="button" href="/incidents/new">
              Raise a limit (incident)
            </Link>
          ) : null}
        </div>
      </header>

      <search>
        <form className={styles.toolbar} action="/customers" method="get">
          <div className={`${styles.field} ${styles.search}`} data-invalid={problem !== null}>
            <label htmlFor="customer-search">Identifier or name</label>
            <input
              id="customer-search"
              name="q"
              type="search"
              defaultValue={q ?? ""}
              placeholder="acme, org:umbrella, Globex…"
              maxLength={200}
              autoComplete="off"
              aria-invalid={problem !== null}
              aria-describedby={problem !== null ? "customer-search-error" : undefined}
            />
            {problem !== null ? (
              <p id="customer-search-error" className={styles.fieldError} role="alert">
                {problem}
              </p>
            ) : null}
          </div>
          <button type="submit" className="button">
            Search
          </button>
          {q !== undefined ? (
            <Link className="button button-secondary" href="/customers">
              Clear
            </Link>
          ) : null}
        </form>
      </search>

      <section className="panel" aria-labelledby="customer-results">
        <h2 id="customer-results">
          {isByRejections
            ? `Customers${q === undefined ? "" : ` matching “${q}”`} by rejections, last hour`
            : q === undefined
              ? "All customers"
              : `Customers matching “${q}”`}
        </h2>
        {isByRejections && ranked === null && problem === null ? (
          <ErrorState
            title="The rejection counts could not be read"
            message="The gateways count rejections per customer in Redis, which did not answer."
            retryHref={hrefWith("/customers", { q, sort })}
          />
        ) : null}
        {rows === null ? null : rows.length === 0 ? (
          <EmptyState
            title={
              isByRejections
                ? `No customer${q === undefined ? "" : ` matching “${q}”`} was rejected in the last hour`
                : q === undefined
                  ? "No customers yet"
                  : `No customer matches “${q}”`
            }
            action={
              q !== undefined ? (
                <Link href={hrefWith("/customers", { sort })} className="button button-secondary">
                  Show all customers
                </Link>
              ) : null
            }
          >
            {isByRejections
              ? "Gateways count each identified customer's rejections per minute; none were counted."
              : q === undefined
                ? "Customers are added through the API (POST /api/v1/customers) or a policy import."
                : "Identifiers match from their start; names match anywhere, ignoring case."}
          </EmptyState>
        ) : (
          <ScrollRegion className={styles.tableScroll} label="Customers">
            <table className="data">
              <thead>
                <tr>
                  <th scope="col">Customer</th>
                  <th scope="col">Name</th>
                  <th scope="col">Tier</th>
                  <RejectionHeaders
                    spanWords="last hour"
                    sortHref={hrefWith("/customers", {
                      q,
                      sort: isByRejections ? undefined : "rejected",
                    })}
                    isSorted={isByRejections}
                  />
                </tr>
              </thead>
              <tbody>
                {rows.map((customer) => (
                  <tr key={customer.id} data-testid="customer-row">
                    <td>
                      <Link href={`/customers/${encodeURIComponent(customer.id)}`} className="mono">
                        {customer.id}
                      </Link>
                    </td>
                    <td>{customer.displayName ?? <span className="muted">not registered</span>}</td>
                    <td>
                      {customer.tier === null ? null : <Badge tone="info">{customer.tier}</Badge>}
                    </td>
                    <RejectionCells
                      record={rejections === null ? null : (rejections.get(customer.id) ?? "none")}
                      spanWords="last hour"
                    />
                  </tr>
                ))}
              </tbody>
            </table>
          </ScrollRegion>
        )}
        {isByRejections ? (
          <p className="muted small">
            The {MOST_REJECTED} customers rejected most in the last hour, registered or not.{" "}
            <Link href={hrefWith("/customers", { q })}>Sort by identifier</Link>
          </p>
        ) : page !== null ? (
          <>
            {rejections === null ? (
              <p className="muted small">The rejection counts could not be read just now.</p>
            ) : null}
            <ForwardPager
              label="Customer pages"
              firstHref={after === undefined ? null : hrefWith("/customers", { q })}
              nextHref={
                page.nextCursor === null
                  ? null
                  : hrefWith("/customers", { q, after: page.nextCursor })
              }
            />
          </>
        ) : null}
      </section>
      {after === undefined && problem === null && !isByRejections ? (
        <SeenCustomersPanel q={q} />
      ) : null}
    </>
  );
}
