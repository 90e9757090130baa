import { LocalTime } from "@/components/ui/local-time";
import { auditEntryHref } from "@/lib/console";
import type { AuditPage } from "@/lib/control";

/** The last few audit entries of one entity, each linking to the audit log. */
export function RecentChanges({ history }: { history: AuditPage }) {
  return (
    <section className="panel" aria-labelledby="history-heading">
      <h2 id="history-heading">Recent changes</h2>
      {history.entries.length === 0 ? (
        <p className="muted">No change recorded since the policy was imported.</p>
      ) : (
        <ul data-testid="recent-changes">
          {history.entries.map((entry) => (
            <li key={entry.id}>
              <LocalTime at={entry.at} /> · {entry.action} by {entry.actor.name}: “{entry.reason}”
              {entry.policyVersion !== null ? ` · policy version ${entry.policyVersion}` : ""} ·{" "}
              <a href={auditEntryHref(entry.id)}>entry</a>
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}
