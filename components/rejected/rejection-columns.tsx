import Link from "next/link";
import { formatNumber, formatRatePerSec, NO_VALUE } from "@/lib/console/format";
import type { RejectedCustomerRecord } from "@/lib/control";
import styles from "./rejected.module.css";
import { Sparkline } from "./sparkline";

/** The rejection columns' headings; the count's sorts the list (a link, with `aria-sort`). */
export function RejectionHeaders({
  spanWords,
  sortHref,
  isSorted,
}: {
  spanWords: string;
  sortHref: string;
  isSorted: boolean;
}) {
  return (
    <>
      <th scope="col" aria-sort={isSorted ? "descending" : "none"}>
        <Link href={sortHref} title={isSorted ? "Sort by identifier" : "Most rejected first"}>
          Rejected, {spanWords}
          {isSorted ? " ↓" : ""}
        </Link>
      </th>
      <th scope="col">Rate</th>
      <th scope="col">Binding limit</th>
      <th scope="col">Trend</th>
    </>
  );
}

/**
 * A customer's rejection cells: `"none"` when the gateways counted none in the span, null when the
 * counts could not be read.
 */
export function RejectionCells({
  record,
  spanWords,
}: {
  record: RejectedCustomerRecord | "none" | null;
  spanWords: string;
}) {
  if (record === null || record === "none") {
    const text = record === null ? NO_VALUE : "0";
    return (
      <>
        <td className={styles.count}>{text}</td>
        <td className={styles.count}>{record === null ? NO_VALUE : ""}</td>
        <td />
        <td />
      </>
    );
  }
  return (
    <>
      <td className={styles.count}>{formatNumber(record.rejected)}</td>
      <td className={styles.count}>{formatRatePerSec(record.rejectedPerMinute / 60)}</td>
      <td>
        <code>{record.bindingScope}</code>
      </td>
      <td>
        <Sparkline values={record.sparkline} label={`Rejections, ${spanWords}`} />
      </td>
    </>
  );
}

/** A rejected row's count and rate over the span (the overview's two tables). */
export function CountAndRateCells({
  rejected,
  rejectedPerMinute,
}: {
  rejected: number;
  rejectedPerMinute: number;
}) {
  return (
    <>
      <td data-label="Rejected" className={styles.count}>
        {formatNumber(rejected)}
      </td>
      <td data-label="Rate" className={styles.count}>
        {formatRatePerSec(rejectedPerMinute / 60)}
      </td>
    </>
  );
}
