/**
 * The customers the gateways report (identified by their `identify`, with the tier they arrived
 * with), read from Redis: the ones not in the registry, and any one customer's report. Read only:
 * registering happens through the registry's own endpoint, or by raising an incident or an
 * override for the customer.
 */
import { ZCustomer } from "@limitplane/enforcer/policy";
import { z } from "zod";
import { getSeenCustomer } from "@/lib/control/seen-customer/get-seen-customer";
import { listSeenCustomers } from "@/lib/control/seen-customer/list-seen-customers";
import { ZListSeenCustomersOptions } from "@/lib/control/seen-customer/seen-customer-schemas";
import { seenCustomerDeps, seenRedisDeps } from "@/lib/server/composition";
import { defineEndpoint } from "../endpoint";
import { queryInt, strictParams } from "./shared";

export const ZSeenCustomerRecord = z.object({
  id: z.string(),
  lastSeenAt: z.string(),
  reportedTier: z
    .string()
    .nullable()
    .describe("The tier the gateways last reported; never policy until an operator registers it"),
  reportedTiers: z
    .array(z.object({ tier: z.string().nullable(), lastSeenAt: z.string() }))
    .readonly(),
});
const tag = "Customers";

export const listSeenCustomersEndpoint = defineEndpoint({
  method: "GET",
  path: "/api/v1/seen-customers",
  summary: "Customers the gateways report that are not in the registry",
  description:
    "Most recently seen first, from the gateways' reports of the last 7 days (each gateway reports at most 1 000 customers an hour; `unreported` counts what went beyond). `search` matches an id prefix, ignoring case.",
  tag,
  access: "policy.read",
  query: strictParams({
    search: ZListSeenCustomersOptions.shape.search,
    limit: queryInt("limit", 1, 200).optional(),
  }),
  response: z.object({
    customers: z.array(ZSeenCustomerRecord).readonly(),
    hasMore: z.boolean(),
    unreported: z.object({ total: z.number().int(), enforcers: z.number().int() }),
  }),
  handle: ({ query }) => listSeenCustomers(query, seenCustomerDeps()),
});

export const getSeenCustomerEndpoint = defineEndpoint({
  method: "GET",
  path: "/api/v1/seen-customers/{id}",
  summary: "What the gateways reported of one customer",
  tag,
  access: "policy.read",
  params: strictParams({ id: ZCustomer.shape.id }),
  response: z.object({ customer: ZSeenCustomerRecord }),
  errors: ["NOT_FOUND"],
  handle: async ({ params }) => ({ customer: await getSeenCustomer(params.id, seenRedisDeps()) }),
});
