import Link from "next/link";
import { Badge } from "@/components/ui/badge";
import { ScrollRegion } from "@/components/ui/scroll-region";
import type { RejectedCustomerRecord } from "@/lib/control";
import styles from "./rejected.module.css";
import { CountAndRateCells } from "./rejection-columns";
import { Sparkline } from "./sparkline";

export interface RejectedCustomersTableProps {
  readonly customers: readonly RejectedCustomerRecord[];
  /** "last hour", "last 15 minutes": said in the caption and the sparklines' labels. */
  readonly spanWords: string;
  /** Offer "Raise" (the viewer may write incidents). */
  readonly canRaise: boolean;
}

/** The incident form for a customer, prefilled (the form preselects the limit that rejected it). */
export function raiseHref(customerId: string): string {
  return `/incidents/new?customer=${encodeURIComponent(customerId)}`;
}

/** The customers rejected most, each with its count, rate, binding limit, sparkline and Raise. */
export function RejectedCustomersTable({
  customers,
  spanWords,
  canRaise,
}: RejectedCustomersTableProps) {
  return (
    <ScrollRegion className="table-scroll" label="Rejected customers">
      <table className="data" data-testid="rejected-customers">
        <caption className="visually-hidden">Customers rejected most, {spanWords}</caption>
        <thead>
          <tr>
            <th scope="col">Customer</th>
            <th scope="col">Rejected</th>
            <th scope="col">Rate</th>
            <th scope="col">Binding limit</th>
            <th scope="col">Trend</th>
            {canRaise ? (
              <th scope="col">
                <span className="visually-hidden">Action</span>
              </th>
            ) : null}
          </tr>
        </thead>
        <tbody>
          {customers.map((customer) => (
            <tr key={customer.customerId} data-testid="rejected-customer-row">
              <th scope="row" data-label="Customer">
                <Link href={`/customers/${encodeURIComponent(customer.customerId)}`}>
                  {customer.displayName ?? <code>{customer.customerId}</code>}
                </Link>{" "}
                {customer.displayName !== null ? (
                  <code className="muted small">{customer.customerId}</code>
                ) : (
                  <Badge tone="muted">not registered</Badge>
                )}
              </th>
              <CountAndRateCells
                rejected={customer.rejected}
                rejectedPerMinute={customer.rejectedPerMinute}
              />
              <td data-label="Binding limit">
                <code>{customer.bindingScope}</code>
                {customer.scopes.length > 1 ? (
                  <span className="muted small"> +{customer.scopes.length - 1} more</span>
                ) : null}
              </td>
              <td data-label="Trend">
                <Sparkline values={customer.sparkline} label={`Rejections, ${spanWords}`} />
              </td>
              {canRaise ? (
                <td data-label="Action">
                  <Link
                    className={`button ${styles.raise}`}
                    href={raiseHref(customer.customerId)}
                    aria-label={`Raise ${customer.displayName ?? customer.customerId}'s limit`}
                  >
                    Raise
                  </Link>
                </td>
              ) : null}
            </tr>
          ))}
        </tbody>
      </table>
    </ScrollRegion>
  );
}
