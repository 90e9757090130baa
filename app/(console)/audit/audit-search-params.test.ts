import { describe, expect, it } from "vitest";
import { ZListAuditEntriesOptions } from "@/lib/control/audit/list-audit-entries";
import {
  auditHref,
  entityHistoryHref,
  firstParam,
  hasAnyFilter,
  readAuditFilters,
  timePresetLinks,
  toListOptions,
} from "./audit-search-params";

describe("the audit page's URL", () => {
  it("reads each filter once, ignoring empty and unknown parameters", () => {
    const filters = readAuditFilters({
      customerId: "acme",
      actorId: ["op-1", "op-2"],
      action: "",
      entityId: "  ",
      page: "7",
    });
    expect(filters).toEqual({ customerId: "acme", actorId: "op-1" });
    expect(hasAnyFilter(filters)).toBe(true);
    expect(hasAnyFilter(readAuditFilters({}))).toBe(false);
    expect(firstParam({ after: undefined }, "after")).toBeUndefined();
  });

  it("pages one way only: older (after) wins over newer (before) in a hand-edited URL", () => {
    expect(toListOptions({}, { after: "A", before: "B" }, 25)).toMatchObject({
      cursor: "A",
      before: undefined,
      limit: 25,
    });
    expect(toListOptions({}, { before: "B" }, 25)).toMatchObject({
      cursor: undefined,
      before: "B",
    });
  });

  it("hands the service what it validates: a wrong value is refused on its field", () => {
    const refusedFields = (filters: Record<string, string>) =>
      ZListAuditEntriesOptions.safeParse(toListOptions(filters, {}, 25)).error?.issues.map(
        (issue) => issue.path.join("."),
      );
    expect(refusedFields({ action: "tier.explode" })).toEqual(["action"]);
    expect(refusedFields({ entityId: "pro" })).toEqual(["entityId"]);
    expect(refusedFields({ from: "yesterday" })).toEqual(["from"]);
    expect(refusedFields({ entityType: "tier", entityId: "pro" })).toBeUndefined();
  });

  it("links filters in a stable order, URL-encoded, and customers to their own page", () => {
    expect(auditHref({})).toBe("/audit");
    expect(auditHref({ entityId: "customer:a/endpoint:b", entityType: "customer-override" })).toBe(
      "/audit?entityType=customer-override&entityId=customer%3Aa%2Fendpoint%3Ab",
    );
    expect(entityHistoryHref("tier", "pro")).toBe("/audit?entityType=tier&entityId=pro");
    expect(entityHistoryHref("customer", "org:umbrella")).toBe("/customers/org%3Aumbrella");
  });
});

describe("timePresetLinks", () => {
  it("keeps the other filters, sets from that long before now and drops to", () => {
    const nowMs = Date.parse("2026-12-05T09:00:00.000Z");
    const links = timePresetLinks(
      { action: "incident.raise", to: "2026-12-01T00:00:00.000Z" },
      nowMs,
    );
    expect(links).toEqual([
      {
        label: "Last hour",
        href: "/audit?action=incident.raise&from=2026-12-05T08%3A00%3A00.000Z",
      },
      {
        label: "Last 24 hours",
        href: "/audit?action=incident.raise&from=2026-12-04T09%3A00%3A00.000Z",
      },
      {
        label: "Last 7 days",
        href: "/audit?action=incident.raise&from=2026-11-28T09%3A00%3A00.000Z",
      },
    ]);
  });
});
