/**
 * A customer's standing overrides, one per layer: `.../overrides/account` (all endpoints) and
 * `.../overrides/endpoints/{endpointClass}`. Creating one names its layer in the body
 * (`endpointClass`, null for the account layer).
 */

import { ZCustomerOverride } from "@limitplane/enforcer/policy";
import { z } from "zod";
import { createCustomerOverride } from "@/lib/control/customer-override/create-customer-override";
import { deleteCustomerOverride } from "@/lib/control/customer-override/delete-customer-override";
import { listCustomerOverrides } from "@/lib/control/customer-override/list-customer-overrides";
import { updateCustomerOverride } from "@/lib/control/customer-override/update-customer-override";
import { controlDeps, seenRedisDeps } from "@/lib/server/composition";
import { defineEndpoint } from "../endpoint";
import {
  changeContextOf,
  strictBody,
  strictParams,
  ZChangeReceipt,
  ZExpectedVersion,
  ZReason,
  ZTimestamps,
} from "./shared";

export const ZCustomerOverrideRecord = z.object({
  ...ZCustomerOverride.shape,
  scope: z.string().describe("customer:C or customer:C/endpoint:E"),
  ...ZTimestamps,
});
const ZOverrideChange = z.object({ override: ZCustomerOverrideRecord, ...ZChangeReceipt });
const ZAccountParams = strictParams({ id: ZCustomerOverride.shape.customerId });
const ZEndpointParams = strictParams({
  id: ZCustomerOverride.shape.customerId,
  endpointClass: ZCustomerOverride.shape.endpointClass.unwrap(),
});
const ZUpdateBody = strictBody({
  expectedVersion: ZExpectedVersion,
  limit: ZCustomerOverride.shape.limit,
  reason: ZReason,
});
const ZDeleteBody = strictBody({ expectedVersion: ZExpectedVersion, reason: ZReason });
const tag = "Customer overrides";

export const listCustomerOverridesEndpoint = defineEndpoint({
  method: "GET",
  path: "/api/v1/customers/{id}/overrides",
  summary: "List a customer's standing overrides",
  tag,
  access: "policy.read",
  params: ZAccountParams,
  response: z.object({ overrides: z.array(ZCustomerOverrideRecord) }),
  handle: async ({ params }) => ({
    overrides: await listCustomerOverrides(params.id, controlDeps()),
  }),
});

export const createCustomerOverrideEndpoint = defineEndpoint({
  method: "POST",
  path: "/api/v1/customers/{id}/overrides",
  summary: "Give a customer a standing limit on one layer",
  tag,
  access: "override.write",
  params: ZAccountParams,
  body: strictBody({
    endpointClass: ZCustomerOverride.shape.endpointClass,
    limit: ZCustomerOverride.shape.limit,
    reason: ZReason,
  }),
  response: ZOverrideChange,
  successStatus: 201,
  errors: ["NOT_FOUND", "CONFLICT"],
  handle: ({ params, body: { reason, ...override }, ...input }) =>
    createCustomerOverride(
      { ...override, customerId: params.id },
      changeContextOf(input, reason),
      controlDeps(),
      seenRedisDeps(),
    ),
});

export const updateAccountOverrideEndpoint = defineEndpoint({
  method: "PATCH",
  path: "/api/v1/customers/{id}/overrides/account",
  summary: "Change a customer's override on all endpoints",
  tag,
  access: "override.write",
  params: ZAccountParams,
  body: ZUpdateBody,
  response: ZOverrideChange,
  errors: ["NOT_FOUND", "VERSION_CONFLICT"],
  handle: ({ params, body: { reason, ...change }, ...input }) =>
    updateCustomerOverride(
      { ...change, customerId: params.id, endpointClass: null },
      changeContextOf(input, reason),
      controlDeps(),
    ),
});

export const deleteAccountOverrideEndpoint = defineEndpoint({
  method: "DELETE",
  path: "/api/v1/customers/{id}/overrides/account",
  summary: "Remove a customer's override on all endpoints",
  tag,
  access: "override.write",
  params: ZAccountParams,
  body: ZDeleteBody,
  response: ZOverrideChange,
  errors: ["NOT_FOUND", "VERSION_CONFLICT"],
  handle: ({ params, body: { reason, expectedVersion }, ...input }) =>
    deleteCustomerOverride(
      { customerId: params.id, endpointClass: null, expectedVersion },
      changeContextOf(input, reason),
      controlDeps(),
    ),
});

export const updateEndpointOverrideEndpoint = defineEndpoint({
  method: "PATCH",
  path: "/api/v1/customers/{id}/overrides/endpoints/{endpointClass}",
  summary: "Change a customer's override on one endpoint class",
  tag,
  access: "override.write",
  params: ZEndpointParams,
  body: ZUpdateBody,
  response: ZOverrideChange,
  errors: ["NOT_FOUND", "VERSION_CONFLICT"],
  handle: ({ params, body: { reason, ...change }, ...input }) =>
    updateCustomerOverride(
      { ...change, customerId: params.id, endpointClass: params.endpointClass },
      changeContextOf(input, reason),
      controlDeps(),
    ),
});

export const deleteEndpointOverrideEndpoint = defineEndpoint({
  method: "DELETE",
  path: "/api/v1/customers/{id}/overrides/endpoints/{endpointClass}",
  summary: "Remove a customer's override on one endpoint class",
  tag,
  access: "override.write",
  params: ZEndpointParams,
  body: ZDeleteBody,
  response: ZOverrideChange,
  errors: ["NOT_FOUND", "VERSION_CONFLICT"],
  handle: ({ params, body: { reason, expectedVersion }, ...input }) =>
    deleteCustomerOverride(
      { customerId: params.id, endpointClass: params.endpointClass, expectedVersion },
      changeContextOf(input, reason),
      controlDeps(),
    ),
});
