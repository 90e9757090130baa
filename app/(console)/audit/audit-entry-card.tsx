import Link from "next/link";
import { AuditDiff } from "@/components/audit/audit-diff";
import { Badge } from "@/components/ui/badge";
import { LocalTime } from "@/components/ui/local-time";
import { diffAuditValues, formatActorKind } from "@/lib/console";
import { type AuditEntryRecord, summarizeAuditEntry } from "@/lib/control";
import styles from "./audit.module.css";
import { auditHref, entityHistoryHref } from "./audit-search-params";

/** A ticket link recorded with the change (incidents carry `ticketUrl`), newest side first. */
export function ticketOf(entry: Pick<AuditEntryRecord, "before" | "after">): string | null {
  for (const side of [entry.after, entry.before]) {
    if (typeof side === "object" && side !== null && "ticketUrl" in side) {
      const value = side.ticketUrl;
      if (typeof value === "string" && value !== "") return value;
    }
  }
  return null;
}

function isWebUrl(value: string): boolean {
  return URL.canParse(value) && ["http:", "https:"].includes(new URL(value).protocol);
}

/**
 * One audit entry, compact: who did what to which entity, when and why on a line or two, and the
 * before/after diff behind a disclosure (open on the entry's own page, `isDiffOpen`), so a page of
 * 25 entries reads as a list rather than 25 tables.
 */
export function AuditEntryCard({
  entry,
  isDiffOpen = false,
}: {
  entry: AuditEntryRecord;
  /** @default false */
  isDiffOpen?: boolean;
}) {
  const ticket = ticketOf(entry);
  const changes = diffAuditValues(entry.before, entry.after);
  const actorHref =
    entry.actor.id === null
      ? auditHref({ actorType: entry.actor.type })
      : auditHref({ actorId: entry.actor.id });
  return (
    <article
      className={styles.entry}
      data-testid="audit-entry"
      data-entry-id={entry.id}
      aria-labelledby={`audit-entry-${entry.id}`}
    >
      <header className={styles.entryHeader}>
        <h2 className={styles.entryTitle} id={`audit-entry-${entry.id}`}>
          <Badge tone={entry.action.endsWith(".delete") ? "bad" : "info"}>{entry.action}</Badge>{" "}
          <Link
            href={entityHistoryHref(entry.entityType, entry.entityId)}
            data-testid="audit-entity"
          >
            <span className="muted">{entry.entityType}</span> <code>{entry.entityId}</code>
          </Link>
        </h2>
        <span className={styles.entryTime}>
          <LocalTime at={entry.at} />
        </span>
      </header>
      <p className={styles.entrySummary} data-testid="audit-summary">
        {summarizeAuditEntry(entry)}
      </p>
      <dl className={styles.entryFacts}>
        <div>
          <dt>By</dt>
          <dd>
            <Link href={actorHref} data-testid="audit-actor">
              {entry.actor.name}
            </Link>{" "}
            <span className="muted small">· {formatActorKind(entry.actor.type)}</span>
          </dd>
        </div>
        {entry.customerId !== null ? (
          <div>
            <dt>Customer</dt>
            <dd>
              <Link
                href={`/customers/${encodeURIComponent(entry.customerId)}`}
                data-testid="audit-customer"
              >
                <code>{entry.customerId}</code>
              </Link>{" "}
              <Link className="small" href={auditHref({ customerId: entry.customerId })}>
                (all changes)
              </Link>
            </dd>
          </div>
        ) : null}
        <div className={styles.wide}>
          <dt>Reason</dt>
          <dd data-testid="audit-reason">{entry.reason}</dd>
        </div>
        {ticket !== null ? (
          <div>
            <dt>Ticket</dt>
            <dd>
              {isWebUrl(ticket) ? (
                <a href={ticket} rel="noopener noreferrer" target="_blank">
                  {ticket}
                </a>
              ) : (
                ticket
              )}
            </dd>
          </div>
        ) : null}
        {entry.policyVersion !== null ? (
          <div>
            <dt>Policy version</dt>
            <dd>v{entry.policyVersion}</dd>
          </div>
        ) : null}
        <div>
          <dt>Entry</dt>
          <dd>
            <Link href={`/audit?entry=${entry.id}`} className="mono small">
              #{entry.id}
            </Link>
          </dd>
        </div>
      </dl>
      <details className={styles.diff} open={isDiffOpen} data-testid="audit-diff">
        <summary>
          Before and after{" "}
          <span className="muted small">
            ({changes.length === 1 ? "1 field" : `${changes.length} fields`})
          </span>
        </summary>
        <AuditDiff
          changes={changes}
          caption={`Changes made by ${entry.action} on ${entry.entityType} ${entry.entityId}`}
        />
      </details>
    </article>
  );
}
