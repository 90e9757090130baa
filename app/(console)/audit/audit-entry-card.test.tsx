import { renderToStaticMarkup } from "react-dom/server";
import { describe, expect, it } from "vitest";
import { AuditHistory } from "@/components/ops/audit-history";
import type { AuditEntryRecord } from "@/lib/control";
import { AuditEntryCard } from "./audit-entry-card";

const entry: AuditEntryRecord = {
  id: "42",
  at: "2025-03-04T12:00:00.000Z",
  actor: { type: "operator", id: "op-1", name: "Limitplane admin" },
  action: "tier.update",
  entityType: "tier",
  entityId: "pro",
  customerId: null,
  before: { limit: { capacity: 20 } },
  after: { limit: { capacity: 60 } },
  reason: "More headroom for the launch",
  requestId: null,
  policyVersion: 7,
};

describe("AuditEntryCard", () => {
  it("is compact in a list: the diff waits behind a disclosure", () => {
    const html = renderToStaticMarkup(<AuditEntryCard entry={entry} />);
    expect(html).toMatch(/<details[^>]*data-testid="audit-diff"[^>]*>/);
    expect(html).not.toMatch(/<details[^>]*open/);
    expect(html).toContain("Before and after");
    expect(html).toContain("(1 field)");
    // The diff is there for whoever opens it.
    expect(html).toContain("limit.capacity");
  });

  it("opens the diff on the entry's own page", () => {
    expect(renderToStaticMarkup(<AuditEntryCard entry={entry} isDiffOpen />)).toMatch(
      /<details[^>]*open=""/,
    );
  });

  it("says what kind of actor it was in words that are not a role", () => {
    const html = renderToStaticMarkup(<AuditEntryCard entry={entry} />);
    expect(html).toContain("· console account");
    expect(html).not.toContain("(operator)");
    const token = renderToStaticMarkup(
      <AuditEntryCard entry={{ ...entry, actor: { type: "token", id: "t-1", name: "ci" } }} />,
    );
    expect(token).toContain("· API token");
  });
});

describe("AuditHistory", () => {
  it("reads 'Limitplane admin · console account', never '(operator)'", () => {
    const html = renderToStaticMarkup(<AuditHistory entries={[entry]} />);
    expect(html).toContain("by Limitplane admin · console account ·");
    expect(html).not.toContain("(operator)");
  });
});
