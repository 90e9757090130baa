import { describe, expect, it } from "vitest";
import { ZListAuditEntriesOptions } from "@/lib/control/audit/list-audit-entries";
import {
  auditHref,
  entityHistoryHref,
  firstParam,
  hasAnyFilter,
  readAuditFilters,
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
