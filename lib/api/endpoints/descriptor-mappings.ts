import { z } from "zod";
import { getDescriptorMappings } from "@/lib/control/descriptor-mapping/get-descriptor-mappings";
import {
  updateDescriptorMappings,
  ZUpdateDescriptorMappingsOptions,
} from "@/lib/control/descriptor-mapping/update-descriptor-mappings";
import { controlDeps } from "@/lib/server/composition";
import { defineEndpoint } from "../endpoint";
import { changeContextOf, strictBody, ZChangeReceipt, ZReason } from "./shared";

const ZMapping = z.object({
  domain: z.string(),
  customer: z.string().nullable(),
  tier: z.string().nullable(),
  method: z.string().nullable(),
  path: z.string().nullable(),
  endpointClass: z.string().nullable(),
  clientAddress: z.string().nullable(),
  limitOverride: z.enum(["ignore", "apply"]),
});
export const ZDescriptorMappingsRecord = z.object({
  /** What is stored; null: none, so `effective` is the default. */
  mappings: z.array(ZMapping).readonly().nullable(),
  /** What the rate-limit service applies. */
  effective: z.array(ZMapping).readonly(),
  version: z.number().int(),
});
const tag = "Descriptor mappings";

export const getDescriptorMappingsEndpoint = defineEndpoint({
  method: "GET",
  path: "/api/v1/descriptor-mappings",
  summary: "Get which Envoy descriptor entries give the customer, tier, method, path and address",
  tag,
  access: "policy.read",
  response: z.object({ descriptorMappings: ZDescriptorMappingsRecord }),
  errors: ["CONFLICT"],
  handle: async () => ({ descriptorMappings: await getDescriptorMappings(controlDeps()) }),
});

export const updateDescriptorMappingsEndpoint = defineEndpoint({
  method: "PUT",
  path: "/api/v1/descriptor-mappings",
  summary: "Replace the descriptor mappings (null: back to the default for every domain)",
  description:
    "One mapping per RLS domain (`*`: every domain no other mapping names). Each says which descriptor entry holds the customer, the tier, the method, the path, the endpoint class and the client address (null: not mapped), and whether a descriptor's own `limit` (Envoy's `RateLimitOverride`) is applied (`limitOverride: apply`) or ignored (`ignore`, the default). The rate-limit service applies the change with the policy, without a restart.",
  tag,
  access: "descriptor-rule.write",
  body: strictBody({ ...ZUpdateDescriptorMappingsOptions.shape, reason: ZReason }),
  response: z.object({ descriptorMappings: ZDescriptorMappingsRecord, ...ZChangeReceipt }),
  errors: ["VERSION_CONFLICT", "CONFLICT", "APPROVAL_REQUIRED"],
  handle: ({ body: { reason, ...change }, ...input }) =>
    updateDescriptorMappings(change, changeContextOf(input, reason), controlDeps()),
});
