/**
 * Who is being rejected: the customers the gateways rejected most over a recent span, from the
 * enforcers' per-minute tally. For alerting tools as much as for the console's overview.
 */
import { z } from "zod";
import { listRejectedCustomers } from "@/lib/control/rejected-customer/list-rejected-customers";
import { MAX_REJECTION_SPAN_MINUTES } from "@/lib/control/rejected-customer/rejected-customer-schemas";
import { rejectedCustomerDeps } from "@/lib/server/composition";
import { defineEndpoint } from "../endpoint";
import { queryInt, strictParams } from "./shared";

export const ZRejectedCustomerRecord = z.object({
  customerId: z.string(),
  displayName: z.string().nullable().describe("Null for a customer only the gateways know"),
  tier: z.string().nullable().describe("Its registered tier; null when not in the registry"),
  rejected: z.number().int().describe("Rejected requests over the span"),
  rejectedPerMinute: z.number().describe("Rejected requests per minute, averaged over the span"),
  bindingScope: z.string().describe("The limit that rejected it most over the span"),
  scopes: z
    .array(z.object({ scope: z.string(), rejected: z.number().int() }))
    .readonly()
    .describe("Every limit that rejected it, the most first"),
  sparkline: z
    .array(z.number().int())
    .readonly()
    .describe("Rejections per point, oldest first; each point is `sparklineMinutes` long"),
  lastRejectedAt: z.string().describe("The start of the last minute with a rejection"),
});

export const ZRejectedAnonymousRecord = z.object({
  scope: z.string().describe("The limit that rejected requests without a customer"),
  rejected: z.number().int().describe("Rejected requests over the span"),
  rejectedPerMinute: z.number().describe("Rejected requests per minute, averaged over the span"),
  sparkline: z
    .array(z.number().int())
    .readonly()
    .describe("Rejections per point, oldest first; each point is `sparklineMinutes` long"),
  lastRejectedAt: z.string().describe("The start of the last minute with a rejection"),
});

export const listRejectedCustomersEndpoint = defineEndpoint({
  method: "GET",
  path: "/api/v1/rejected-customers",
  summary: "The customers the gateways rejected most over a recent span",
  description: `The most rejected first, over the last \`minutes\` (the current minute included, still counting; at most ${MAX_REJECTION_SPAN_MINUTES}: the gateways keep 6 hours). Counted by the gateways per minute and limit, keeping each minute's 1 000 largest customer-and-limit counts, so the answer is bounded whatever the number of customers. Requests without a customer are ranked apart, per limit (\`anonymous\`, at most 10): no address leaves the gateways, raw or hashed.`,
  tag: "Customers",
  access: "metrics.read",
  query: strictParams({
    minutes: queryInt("minutes", 1, MAX_REJECTION_SPAN_MINUTES).optional(),
    limit: queryInt("limit", 1, 200).optional(),
  }),
  response: z.object({
    from: z.string(),
    to: z.string(),
    minutes: z.number().int(),
    sparklineMinutes: z.number().int(),
    customers: z.array(ZRejectedCustomerRecord).readonly(),
    totalRejected: z.number().int().describe("Every identified customer's rejections in the span"),
    rejectedCustomerCount: z.number().int().describe("Distinct customers rejected in the span"),
    anonymous: z
      .array(ZRejectedAnonymousRecord)
      .readonly()
      .describe("Requests without a customer, per limit, the most rejected first; at most 10"),
    anonymousRejected: z.number().int().describe("Every anonymous rejection in the span"),
  }),
  handle: ({ query }) => listRejectedCustomers(query, rejectedCustomerDeps()),
});
