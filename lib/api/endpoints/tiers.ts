import { ZTier } from "@limitplane/enforcer/policy";
import { z } from "zod";
import { createTier } from "@/lib/control/tier/create-tier";
import { deleteTier } from "@/lib/control/tier/delete-tier";
import { getTier } from "@/lib/control/tier/get-tier";
import { listTiers } from "@/lib/control/tier/list-tiers";
import { updateTier, ZUpdateTierOptions } from "@/lib/control/tier/update-tier";
import { controlDeps } from "@/lib/server/composition";
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

export const ZTierRecord = z.object({ ...ZTier.shape, ...ZTimestamps });
const ZTierChange = z.object({ tier: ZTierRecord, ...ZChangeReceipt });
const ZTierParams = strictParams({ name: ZTier.shape.name });
const tag = "Tiers";

export const listTiersEndpoint = defineEndpoint({
  method: "GET",
  path: "/api/v1/tiers",
  summary: "List tiers",
  tag,
  access: "policy.read",
  response: z.object({ tiers: z.array(ZTierRecord) }),
  handle: async () => ({ tiers: await listTiers(controlDeps()) }),
});

export const createTierEndpoint = defineEndpoint({
  method: "POST",
  path: "/api/v1/tiers",
  summary: "Create a tier",
  tag,
  access: "tier.write",
  body: strictBody({ ...ZTier.shape, reason: ZReason }),
  response: ZTierChange,
  successStatus: 201,
  errors: ["CONFLICT"],
  handle: ({ body: { reason, ...tier }, ...input }) =>
    createTier(tier, changeContextOf(input, reason), controlDeps()),
});

export const getTierEndpoint = defineEndpoint({
  method: "GET",
  path: "/api/v1/tiers/{name}",
  summary: "Get a tier",
  tag,
  access: "policy.read",
  params: ZTierParams,
  response: z.object({ tier: ZTierRecord }),
  errors: ["NOT_FOUND"],
  handle: async ({ params }) => ({ tier: await getTier(params.name, controlDeps()) }),
});

const { name: _name, ...tierUpdateShape } = ZUpdateTierOptions.shape;

export const updateTierEndpoint = defineEndpoint({
  method: "PATCH",
  path: "/api/v1/tiers/{name}",
  summary: "Change a tier's display name or limit",
  tag,
  access: "tier.write",
  params: ZTierParams,
  body: strictBody({ ...tierUpdateShape, reason: ZReason }),
  response: ZTierChange,
  errors: ["NOT_FOUND", "VERSION_CONFLICT", "APPROVAL_REQUIRED"],
  handle: ({ params, body: { reason, ...change }, ...input }) =>
    updateTier({ ...change, name: params.name }, changeContextOf(input, reason), controlDeps()),
});

export const deleteTierEndpoint = defineEndpoint({
  method: "DELETE",
  path: "/api/v1/tiers/{name}",
  summary: "Delete a tier nothing refers to",
  tag,
  access: "tier.write",
  params: ZTierParams,
  body: strictBody({ expectedVersion: ZExpectedVersion, reason: ZReason }),
  response: ZTierChange,
  errors: ["NOT_FOUND", "VERSION_CONFLICT", "CONFLICT", "APPROVAL_REQUIRED"],
  handle: ({ params, body: { reason, expectedVersion }, ...input }) =>
    deleteTier(
      { name: params.name, expectedVersion },
      changeContextOf(input, reason),
      controlDeps(),
    ),
});
