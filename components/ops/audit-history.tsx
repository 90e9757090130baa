import Link from "next/link";
import { AuditDiff } from "@/components/audit/audit-diff";
import { Badge } from "@/components/ui/badge";
import { LocalTime } from "@/components/ui/local-time";
import { diffAuditValues, formatActorKind } from "@/lib/console";
import { type AuditEntryRecord, summarizeAuditEntry } from "@/lib/control";
import styles from "./ops.module.css";

/** Where an audit entry's entity is shown in the console, when it has a page. */
function entityHref(entry: AuditEntryRecord): string | null {
  if (entry.entityType === "incident") return `/incidents/${encodeURIComponent(entry.entityId)}`;
  if (entry.entityType === "customer") return `/customers/${encodeURIComponent(entry.entityId)}`;
  return null;
}

/** Audit entries, newest first: who, when, what, why, and the before/after diff. */
export function AuditHistory({ entries }: { entries: readonly AuditEntryRecord[] }) {
  return (
    <ol className={styles.history}>
      {entries.map((entry) => {
        const href = entityHref(entry);
        return (
          <li key={entry.id} className={styles.historyItem} data-testid="history-entry">
            <div>
              <Badge tone="info">{entry.action}</Badge>{" "}
              {href === null ? (
                <code>{entry.entityId}</code>
              ) : (
                <Link href={href}>
                  <code>{entry.entityId}</code>
                </Link>
              )}{" "}
              <span className="muted small">
                by {entry.actor.name} · {formatActorKind(entry.actor.type)} ·{" "}
                <LocalTime at={entry.at} relative />
                {entry.policyVersion !== null ? ` · policy v${entry.policyVersion}` : ""}
              </span>
            </div>
            <p className={styles.reason} data-testid="history-summary">
              {summarizeAuditEntry(entry)}
            </p>
            <p className={styles.reason}>
              <span className="muted">Reason: </span>
              {entry.reason}
            </p>
            <details>
              <summary className="small">Before and after</summary>
              <AuditDiff
                changes={diffAuditValues(entry.before, entry.after)}
                caption={`Changes made by ${entry.action}`}
              />
            </details>
          </li>
        );
      })}
    </ol>
  );
}
