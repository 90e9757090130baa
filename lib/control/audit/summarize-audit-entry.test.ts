import { describe, expect, it } from "vitest";
import { type SummarizableAuditEntry, summarizeAuditEntry } from "./summarize-audit-entry";

const bucket = (refillPerSec: number, capacity: number) => ({
  algorithm: "token-bucket",
  capacity,
  refillPerSec,
});

const incident = {
  id: "inc-1",
  customerId: "vandelay",
  endpointClass: null,
  factor: 3,
  limit: null,
  startsAt: "2026-12-04T14:21:25.068Z",
  expiresAt: "2026-12-04T14:36:25.068Z",
  owner: "ana",
  reason: "launch",
  ticketUrl: null,
  revokedAt: null,
};

function entry(fields: Partial<SummarizableAuditEntry>): SummarizableAuditEntry {
  return {
    action: "tier.update",
    entityType: "tier",
    entityId: "pro",
    customerId: null,
    before: null,
    after: null,
    at: "2026-12-04T14:21:25.068Z",
    ...fields,
  };
}

/** The extension of `incident` to what `after` says. */
function extension(after: Record<string, unknown>): SummarizableAuditEntry {
  return entry({
    action: "incident.extend",
    entityType: "incident",
    entityId: "inc-1",
    customerId: "vandelay",
    before: incident,
    after,
  });
}

describe("summarizeAuditEntry", () => {
  it.each<[string, SummarizableAuditEntry, string]>([
    [
      "an incident raise states the limit before and after, the span and the end in UTC",
      entry({
        action: "incident.raise",
        entityType: "incident",
        entityId: "inc-1",
        customerId: "vandelay",
        after: { ...incident, effect: { before: bucket(10, 20), after: bucket(30, 60) } },
      }),
      "vandelay, all endpoints: 10/s, bursts of 20 → 30/s, bursts of 60 for 15 min (until 14:36 UTC)",
    ],
    [
      "an incident without recorded numbers says its factor",
      entry({
        action: "incident.raise",
        entityType: "incident",
        entityId: "inc-1",
        customerId: "vandelay",
        after: { ...incident, endpointClass: "search" },
      }),
      "vandelay, endpoint class search: limit ×3 for 15 min (until 14:36 UTC)",
    ],
    [
      "an extension says the old and new end",
      extension({ ...incident, expiresAt: "2026-12-04T14:51:25.068Z" }),
      "vandelay, all endpoints: limit ×3 extended, until 14:36 UTC → 14:51 UTC",
    ],
    [
      "an end on another day gives the date",
      entry({
        action: "incident.revert",
        entityType: "incident",
        entityId: "inc-1",
        customerId: "vandelay",
        at: "2026-12-03T10:00:00.000Z",
        before: incident,
        after: { ...incident, revokedAt: "2026-12-03T10:00:00.000Z" },
      }),
      "vandelay, all endpoints: limit ×3 reverted before its end (2026-12-04 14:36 UTC); the usual limit applies again",
    ],
    [
      "a revert with its numbers reads from the incident's limit back to the usual one",
      entry({
        action: "incident.revert",
        entityType: "incident",
        entityId: "inc-1",
        customerId: "vandelay",
        at: "2026-12-04T14:30:00.000Z",
        before: incident,
        after: {
          ...incident,
          revokedAt: "2026-12-04T14:30:00.000Z",
          effect: { before: bucket(10, 20), after: bucket(30, 60) },
        },
      }),
      "vandelay, all endpoints: 30/s, bursts of 60 → 10/s, bursts of 20 reverted before its end (14:36 UTC); the usual limit applies again",
    ],
    [
      "an extension with its numbers states them",
      extension({
        ...incident,
        expiresAt: "2026-12-04T14:51:25.068Z",
        effect: { before: bucket(10, 20), after: bucket(30, 60) },
      }),
      "vandelay, all endpoints: 10/s, bursts of 20 → 30/s, bursts of 60 extended, until 14:36 UTC → 14:51 UTC",
    ],
    [
      "a tier change in rates and bursts",
      entry({
        before: { name: "pro", limit: bucket(10, 20) },
        after: { name: "pro", limit: bucket(20, 40) },
      }),
      "tier pro: 10/s, bursts of 20 → 20/s, bursts of 40",
    ],
    [
      "an override removed says what it was",
      entry({
        action: "override.delete",
        entityType: "customer-override",
        entityId: "vandelay:account",
        customerId: "vandelay",
        before: { customerId: "vandelay", endpointClass: null, limit: bucket(5, 5) },
      }),
      "vandelay, all endpoints: override of 5/s, bursts of 5 removed; the tier's limit applies",
    ],
    [
      "an endpoint class names each tier whose limit moved, and the cost",
      entry({
        action: "endpoint-class.update",
        entityType: "endpoint-class",
        entityId: "search",
        before: { name: "search", cost: 1, limits: { free: bucket(1, 2), pro: bucket(5, 5) } },
        after: {
          name: "search",
          cost: 2,
          limits: {
            free: { algorithm: "fixed-window", limit: 100, windowMs: 60_000 },
            pro: bucket(5, 5),
          },
        },
      }),
      "endpoint class search: free 1/s, bursts of 2 → 100 per minute; cost 1 → 2",
    ],
    [
      "a customer's tier move",
      entry({
        action: "customer.update",
        entityType: "customer",
        entityId: "vandelay",
        customerId: "vandelay",
        before: { id: "vandelay", tier: "free", displayName: "V", version: 1 },
        after: { id: "vandelay", tier: "pro", displayName: "V", version: 2 },
      }),
      "customer vandelay: tier free → pro",
    ],
    [
      "anything else names its status move or the fields that changed",
      entry({
        action: "change-request.approve",
        entityType: "change-request",
        entityId: "cr_1",
        before: { status: "pending", version: 1 },
        after: { status: "approved", version: 2 },
      }),
      "change-request cr_1 approved: pending → approved",
    ],
    [
      "hostile JSON never throws: a limit without numbers is 'a limit'",
      entry({ before: { limit: { algorithm: "token-bucket" } }, after: { limit: "x" } }),
      "tier pro: a limit",
    ],
  ])("%s", (_name, input, expected) => {
    expect(summarizeAuditEntry(input)).toBe(expected);
  });
});
