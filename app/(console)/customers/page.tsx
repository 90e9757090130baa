import type { Metadata } from "next";
import Link from "next/link";
import { SeenCustomersPanel } from "@/components/customers/seen-customers-panel";
import { ForwardPager } from "@/components/ops/forward-pager";
import styles from "@/components/ops/ops.module.css";
import { hrefWith, type PageSearchParams, singleParam } from "@/components/ops/search-params";
import { Badge } from "@/components/ui/badge";
import { EmptyState } from "@/components/ui/empty-state";
import { ScrollRegion } from "@/components/ui/scroll-region";
import { type CustomerPage, isAppError, listCustomers } from "@/lib/control";
import { can } from "@/lib/control/auth/roles";
import { controlDeps } from "@/lib/server/composition";
import { requirePrincipal } from "@/lib/server/current-principal";

export const metadata: Metadata = { title: "Customers" };

const PAGE_SIZE = 25;

export default async function CustomersPage({
  searchParams,
}: {
  searchParams: Promise<PageSearchParams>;
}) {
  const params = await searchParams;
  const q = singleParam(params, "q")?.trim() || undefined;
  const after = singleParam(params, "after");
  const principal = await requirePrincipal("policy.read", {
    next: hrefWith("/customers", { q, after }),
  });

  let page: CustomerPage | null = null;
  let problem: string | null = null;
  try {
    page = await listCustomers({ search: q, after, limit: PAGE_SIZE }, controlDeps());
  } catch (error: unknown) {
    if (!isAppError(error) || error.code !== "VALIDATION_FAILED") throw error;
    problem = error.fieldErrors.map((field) => field.message).join("; ") || error.message;
  }

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
          {q === undefined ? "All customers" : `Customers matching “${q}”`}
        </h2>
        {page === null ? null : page.customers.length === 0 ? (
          <EmptyState
            title={q === undefined ? "No customers yet" : `No customer matches “${q}”`}
            action={
              q !== undefined ? (
                <Link href="/customers" className="button button-secondary">
                  Show all customers
                </Link>
              ) : null
            }
          >
            {q === undefined
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
                </tr>
              </thead>
              <tbody>
                {page.customers.map((customer) => (
                  <tr key={customer.id} data-testid="customer-row">
                    <td>
                      <Link href={`/customers/${encodeURIComponent(customer.id)}`} className="mono">
                        {customer.id}
                      </Link>
                    </td>
                    <td>{customer.displayName}</td>
                    <td>
                      <Badge tone="info">{customer.tier}</Badge>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </ScrollRegion>
        )}
        {page !== null ? (
          <ForwardPager
            label="Customer pages"
            firstHref={after === undefined ? null : hrefWith("/customers", { q })}
            nextHref={
              page.nextCursor === null
                ? null
                : hrefWith("/customers", { q, after: page.nextCursor })
            }
          />
        ) : null}
      </section>
      {after === undefined && problem === null ? <SeenCustomersPanel q={q} /> : null}
    </>
  );
}
