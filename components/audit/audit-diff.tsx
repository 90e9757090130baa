import type { AuditChange, AuditChangeKind } from "@/lib/console/audit-diff";
import { Badge, type BadgeTone } from "../ui/badge";

export interface AuditDiffProps {
  /** From `diffAuditValues(entry.before, entry.after)`. */
  changes: readonly AuditChange[];
  /** Names the table for screen readers. @default "Changes" */
  caption?: string;
}

const KIND: Record<AuditChangeKind, { label: string; tone: BadgeTone }> = {
  added: { label: "added", tone: "ok" },
  removed: { label: "removed", tone: "bad" },
  changed: { label: "changed", tone: "info" },
};

/**
 * An audit entry's changes as a before/after table: one row per changed path, with what kind of
 * change it was in words (not only colour). Every value is rendered as text; whatever an operator
 * or customer typed into a name or reason appears exactly as typed, quoted, never as markup.
 */
export function AuditDiff({ changes, caption = "Changes" }: AuditDiffProps) {
  if (changes.length === 0) {
    return <p className="muted small">No field changed.</p>;
  }
  return (
    <table className="data audit-diff">
      <caption className="visually-hidden">{caption}</caption>
      <thead>
        <tr>
          <th scope="col">Field</th>
          <th scope="col">Before</th>
          <th scope="col">After</th>
        </tr>
      </thead>
      <tbody>
        {changes.map((change) => (
          <tr key={`${change.kind}:${change.path}`} className={`audit-diff-${change.kind}`}>
            <th scope="row" data-label="Field">
              <code className="audit-diff-path">
                {change.path === "" ? "(whole value)" : change.path}
              </code>{" "}
              <Badge tone={KIND[change.kind].tone}>{KIND[change.kind].label}</Badge>
            </th>
            <td data-label="Before">
              {change.before === null ? (
                <span className="muted">(none)</span>
              ) : (
                <code className="audit-diff-value">{change.before}</code>
              )}
            </td>
            <td data-label="After">
              {change.after === null ? (
                <span className="muted">(none)</span>
              ) : (
                <code className="audit-diff-value">{change.after}</code>
              )}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
