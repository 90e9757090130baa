import { ZCustomer } from "@limitplane/enforcer/policy";
import { z } from "zod";
import { createCustomer } from "@/lib/control/customer/create-customer";
import { deleteCustomer } from "@/lib/control/customer/delete-customer";
import { getCustomer } from "@/lib/control/customer/get-customer";
import { listCustomers, ZListCustomersOptions } from "@/lib/control/customer/list-customers";
import { updateCustomer, ZUpdateCustomerOptions } from "@/lib/control/customer/update-customer";
import { controlDeps } from "@/lib/server/composition";
import { defineEndpoint } from "../endpoint";
import {
  changeContextOf,
  queryInt,
  strictBody,
  strictParams,
  ZChangeReceipt,
  ZExpectedVersion,
  ZReason,
  ZTimestamps,
} from "./shared";

export const ZCustomerRecord = z.object({ ...ZCustomer.shape, ...ZTimestamps });
const ZCustomerChange = z.object({ customer: ZCustomerRecord, ...ZChangeReceipt });
export const ZCustomerParams = strictParams({ id: ZCustomer.shape.id });
const tag = "Customers";

export const listCustomersEndpoint = defineEndpoint({
  method: "GET",
  path: "/api/v1/customers",
  summary: "Search customers by id prefix or name, a page at a time",
  description:
    "Customers ordered by id. `search` matches an id prefix or a name substring, ignoring case. Pass `nextCursor` as `after` for the next page.",
  tag,
  access: "policy.read",
  query: strictParams({
    search: ZListCustomersOptions.shape.search,
    tier: ZListCustomersOptions.shape.tier,
    after: ZListCustomersOptions.shape.after,
    limit: queryInt("limit", 1, 200).optional(),
  }),
  response: z.object({
    customers: z.array(ZCustomerRecord).readonly(),
    nextCursor: z.string().nullable(),
  }),
  handle: ({ query }) => listCustomers(query, controlDeps()),
});

export const createCustomerEndpoint = defineEndpoint({
  method: "POST",
  path: "/api/v1/customers",
  summary: "Add a customer to the registry",
  tag,
  access: "customer.write",
  body: strictBody({ ...ZCustomer.shape, reason: ZReason }),
  response: ZCustomerChange,
  successStatus: 201,
  errors: ["CONFLICT"],
  handle: ({ body: { reason, ...customer }, ...input }) =>
    createCustomer(customer, changeContextOf(input, reason), controlDeps()),
});

export const getCustomerEndpoint = defineEndpoint({
  method: "GET",
  path: "/api/v1/customers/{id}",
  summary: "Get a customer",
  tag,
  access: "policy.read",
  params: ZCustomerParams,
  response: z.object({ customer: ZCustomerRecord }),
  errors: ["NOT_FOUND"],
  handle: async ({ params }) => ({ customer: await getCustomer(params.id, controlDeps()) }),
});

const { id: _id, ...customerUpdateShape } = ZUpdateCustomerOptions.shape;

export const updateCustomerEndpoint = defineEndpoint({
  method: "PATCH",
  path: "/api/v1/customers/{id}",
  summary: "Rename a customer or move it to another tier",
  tag,
  access: "customer.write",
  params: ZCustomerParams,
  body: strictBody({ ...customerUpdateShape, reason: ZReason }),
  response: ZCustomerChange,
  errors: ["NOT_FOUND", "VERSION_CONFLICT"],
  handle: ({ params, body: { reason, ...change }, ...input }) =>
    updateCustomer({ ...change, id: params.id }, changeContextOf(input, reason), controlDeps()),
});

export const deleteCustomerEndpoint = defineEndpoint({
  method: "DELETE",
  path: "/api/v1/customers/{id}",
  summary: "Remove a customer without overrides or current incidents",
  tag,
  access: "customer.write",
  params: ZCustomerParams,
  body: strictBody({ expectedVersion: ZExpectedVersion, reason: ZReason }),
  response: ZCustomerChange,
  errors: ["NOT_FOUND", "VERSION_CONFLICT", "CONFLICT"],
  handle: ({ params, body: { reason, expectedVersion }, ...input }) =>
    deleteCustomer(
      { id: params.id, expectedVersion },
      changeContextOf(input, reason),
      controlDeps(),
    ),
});
