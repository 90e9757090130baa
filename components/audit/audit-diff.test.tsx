import { renderToStaticMarkup } from "react-dom/server";
import { describe, expect, it } from "vitest";
import { diffAuditValues } from "@/lib/console/audit-diff";
import { AuditDiff } from "./audit-diff";

describe("AuditDiff", () => {
  it("shows each change with its kind in words, old and new values", () => {
    const html = renderToStaticMarkup(
      <AuditDiff
        changes={diffAuditValues(
          { limit: { capacity: 20 }, ticketUrl: "https://t/1" },
          { limit: { capacity: 60 }, owner: "ops" },
        )}
      />,
    );
    expect(html).toContain('<code class="audit-diff-path">limit.capacity</code>');
    expect(html).toContain(">changed</span>");
    expect(html).toContain(">added</span>");
    expect(html).toContain(">removed</span>");
    expect(html).toContain('<code class="audit-diff-value">20</code>');
    expect(html).toContain('<code class="audit-diff-value">60</code>');
    expect(html).toContain('data-label="Before"');
  });

  it("shows what a customer or operator typed as text, never as markup", () => {
    const html = renderToStaticMarkup(
      <AuditDiff
        changes={diffAuditValues(
          { displayName: "Acme" },
          { displayName: '<img src=x onerror="alert(1)"><script>alert(2)</script>' },
        )}
      />,
    );
    expect(html).not.toMatch(/<img|<script/);
    expect(html).toContain("&lt;img src=x onerror=\\&quot;alert(1)\\&quot;&gt;&lt;script&gt;");
  });

  it("says when nothing changed", () => {
    expect(renderToStaticMarkup(<AuditDiff changes={[]} />)).toContain("No field changed.");
  });
});
