import { ZCeilings, ZGuardrails } from "@limitplane/enforcer/policy";
import { z } from "zod";
import { getPolicySettings } from "@/lib/control/settings/get-policy-settings";
import {
  updatePolicySettings,
  ZUpdatePolicySettingsOptions,
} from "@/lib/control/settings/update-policy-settings";
import { controlDeps } from "@/lib/server/composition";
import { defineEndpoint } from "../endpoint";
import { changeContextOf, strictBody, ZChangeReceipt, ZReason, ZTimestamps } from "./shared";

export const ZSettingsRecord = z.object({
  defaultTier: z.string(),
  defaultEndpointClass: z.string(),
  ceilings: ZCeilings,
  guardrails: ZGuardrails,
  ...ZTimestamps,
});
const tag = "Settings";

export const getSettingsEndpoint = defineEndpoint({
  method: "GET",
  path: "/api/v1/settings",
  summary: "Get the policy's settings: defaults, ceilings and guardrails",
  tag,
  access: "policy.read",
  response: z.object({ settings: ZSettingsRecord }),
  errors: ["CONFLICT"],
  handle: async () => ({ settings: await getPolicySettings(controlDeps()) }),
});

export const updateSettingsEndpoint = defineEndpoint({
  method: "PATCH",
  path: "/api/v1/settings",
  summary: "Change the defaults, ceilings or guardrails (fields not given stay)",
  tag,
  access: "settings.write",
  body: strictBody({ ...ZUpdatePolicySettingsOptions.shape, reason: ZReason }),
  response: z.object({ settings: ZSettingsRecord, ...ZChangeReceipt }),
  errors: ["VERSION_CONFLICT", "CONFLICT", "APPROVAL_REQUIRED"],
  handle: ({ body: { reason, ...change }, ...input }) =>
    updatePolicySettings(change, changeContextOf(input, reason), controlDeps()),
});
