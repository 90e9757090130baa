import { ZDescriptorRule } from "@limitplane/enforcer/policy";
import { z } from "zod";
import { createDescriptorRule } from "@/lib/control/descriptor-rule/create-descriptor-rule";
import { deleteDescriptorRule } from "@/lib/control/descriptor-rule/delete-descriptor-rule";
import {
  importEnvoyConfig,
  ZImportEnvoyConfigOptions,
} from "@/lib/control/descriptor-rule/import-envoy-config";
import { listDescriptorRules } from "@/lib/control/descriptor-rule/list-descriptor-rules";
import {
  raiseDescriptorValue,
  ZRaiseDescriptorValueOptions,
} from "@/lib/control/descriptor-rule/raise-descriptor-value";
import { revertDescriptorRaise } from "@/lib/control/descriptor-rule/revert-descriptor-raise";
import {
  updateDescriptorRule,
  ZUpdateDescriptorRuleOptions,
} from "@/lib/control/descriptor-rule/update-descriptor-rule";
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

const ZRaise = z.object({
  id: z.string(),
  descriptor: z.array(z.object({ key: z.string(), value: z.string() })),
  factor: z.number().nullable(),
  limit: z.record(z.string(), z.unknown()).nullable(),
  startsAt: z.string(),
  expiresAt: z.string(),
  owner: z.string(),
  reason: z.string(),
});
const ZRule = z.object({
  id: z.string(),
  domain: z.string(),
  descriptor: z.array(z.object({ key: z.string(), value: z.string().nullable() })),
  limit: z.union([z.record(z.string(), z.unknown()), z.enum(["unlimited", "deny"])]),
  mode: z.enum(["enforce", "dry-run", "off"]),
  onStoreFailure: z.enum(["open", "closed", "local"]),
  /** Absent: async. */
  durability: z.enum(["async", "replicated"]).optional(),
  name: z.string().nullable(),
  replaces: z.array(z.string()),
  wildcardCounter: z.enum(["per-value", "shared"]),
  detailedMetric: z.boolean(),
  raises: z.array(ZRaise),
});
export const ZDescriptorRuleRecord = z.object({ ...ZRule.shape, ...ZTimestamps });
const ZRuleChange = z.object({ rule: ZDescriptorRuleRecord, ...ZChangeReceipt });
const ZRuleParams = strictParams({ id: ZDescriptorRule.shape.id });
const tag = "Descriptor rules";

export const listDescriptorRulesEndpoint = defineEndpoint({
  method: "GET",
  path: "/api/v1/descriptor-rules",
  summary: "List descriptor rules",
  tag,
  access: "policy.read",
  response: z.object({ rules: z.array(ZDescriptorRuleRecord) }),
  handle: async () => ({ rules: await listDescriptorRules(controlDeps()) }),
});

export const createDescriptorRuleEndpoint = defineEndpoint({
  method: "POST",
  path: "/api/v1/descriptor-rules",
  summary: "Add a limit keyed by Envoy descriptors",
  tag,
  access: "descriptor-rule.write",
  body: strictBody({ ...ZDescriptorRule.shape, reason: ZReason }),
  response: ZRuleChange,
  successStatus: 201,
  errors: ["CONFLICT"],
  handle: ({ body: { reason, ...rule }, ...input }) =>
    createDescriptorRule(rule, changeContextOf(input, reason), controlDeps()),
});

const { id: _id, ...updateShape } = ZUpdateDescriptorRuleOptions.shape;

export const updateDescriptorRuleEndpoint = defineEndpoint({
  method: "PATCH",
  path: "/api/v1/descriptor-rules/{id}",
  summary: "Change a descriptor rule's limit or options",
  tag,
  access: "descriptor-rule.write",
  params: ZRuleParams,
  body: strictBody({ ...updateShape, reason: ZReason }),
  response: ZRuleChange,
  errors: ["NOT_FOUND", "VERSION_CONFLICT"],
  handle: ({ params, body: { reason, ...change }, ...input }) =>
    updateDescriptorRule(
      { ...change, id: params.id },
      changeContextOf(input, reason),
      controlDeps(),
    ),
});

export const deleteDescriptorRuleEndpoint = defineEndpoint({
  method: "DELETE",
  path: "/api/v1/descriptor-rules/{id}",
  summary: "Remove a descriptor rule",
  tag,
  access: "descriptor-rule.write",
  params: ZRuleParams,
  body: strictBody({ expectedVersion: ZExpectedVersion, reason: ZReason }),
  response: ZRuleChange,
  errors: ["NOT_FOUND", "VERSION_CONFLICT"],
  handle: ({ params, body, ...input }) =>
    deleteDescriptorRule(
      { id: params.id, expectedVersion: body.expectedVersion },
      changeContextOf(input, body.reason),
      controlDeps(),
    ),
});

export const importEnvoyConfigEndpoint = defineEndpoint({
  method: "POST",
  path: "/api/v1/descriptor-rules/import-envoy",
  summary: "Import envoyproxy/ratelimit YAML files as descriptor rules (or preview it)",
  description:
    "The body holds the files (`name`, `text`). The files replace every rule of the domains they name; rules of other domains stay. Anything that cannot be carried over is refused with its file, line and field (`fieldErrors[].path` is `file:line field`), and nothing is written. With `dryRun: true` nothing is written and the answer shows the rules and their difference from the stored ones.",
  tag,
  access: "policy.import",
  body: strictBody({ ...ZImportEnvoyConfigOptions.shape, reason: ZReason }),
  maxBodyBytes: 16 * 1024 * 1024,
  response: z.object({
    preview: z.object({
      domains: z.array(z.string()).readonly(),
      rules: z.array(ZRule).readonly(),
      added: z.array(ZRule).readonly(),
      changed: z.array(z.object({ before: ZDescriptorRuleRecord, after: ZRule })).readonly(),
      removed: z.array(ZDescriptorRuleRecord).readonly(),
      unchanged: z.number().int(),
    }),
    auditEntryId: ZChangeReceipt.auditEntryId.nullable(),
    policyVersion: ZChangeReceipt.policyVersion,
    published: ZChangeReceipt.published,
    /** True when nothing was written: a preview, or files identical to the stored rules. */
    isNoChange: z.boolean(),
    dryRun: z.boolean(),
  }),
  errors: ["CONFLICT"],
  handle: async ({ body: { reason, ...options }, ...input }) => {
    const result = await importEnvoyConfig(options, changeContextOf(input, reason), controlDeps());
    if ("dryRun" in result) {
      return {
        preview: result.preview,
        auditEntryId: null,
        policyVersion: null,
        published: false,
        isNoChange: true,
        dryRun: true,
      };
    }
    return { ...result, isNoChange: "isNoChange" in result, dryRun: false };
  },
});

const { ruleId: _ruleId, ...raiseShape } = ZRaiseDescriptorValueOptions.shape;

export const raiseDescriptorValueEndpoint = defineEndpoint({
  method: "POST",
  path: "/api/v1/descriptor-rules/{id}/raises",
  summary: "Raise one descriptor value's limit for a while",
  description:
    "An incident override for one value of a descriptor rule (`tenant=acme`): a `factor` of the rule's limit or an absolute `limit`, from `startsAt` (default now) until `expiresAt` (or for `durationMs`). The value keeps counting on the rule's counter; other values keep the rule's limit; at expiry the rule's limit applies again by itself. Bounded by the policy's guardrails like an incident.",
  tag,
  access: "incident.write",
  params: ZRuleParams,
  body: strictBody({ ...raiseShape, reason: ZReason }),
  response: z.object({ rule: ZDescriptorRuleRecord, raise: ZRaise, ...ZChangeReceipt }),
  successStatus: 201,
  errors: ["NOT_FOUND"],
  handle: ({ params, body: { reason, ...raise }, ...input }) =>
    raiseDescriptorValue(
      { ...raise, ruleId: params.id },
      changeContextOf(input, reason),
      controlDeps(),
    ),
});

export const revertDescriptorRaiseEndpoint = defineEndpoint({
  method: "DELETE",
  path: "/api/v1/descriptor-rules/{id}/raises/{raiseId}",
  summary: "End a raise of one descriptor value now",
  tag,
  access: "incident.write",
  params: strictParams({ id: ZDescriptorRule.shape.id, raiseId: z.string().min(1).max(64) }),
  body: strictBody({ expectedVersion: ZExpectedVersion, reason: ZReason }),
  response: ZRuleChange,
  errors: ["NOT_FOUND", "VERSION_CONFLICT"],
  handle: ({ params, body, ...input }) =>
    revertDescriptorRaise(
      { ruleId: params.id, raiseId: params.raiseId, expectedVersion: body.expectedVersion },
      changeContextOf(input, body.reason),
      controlDeps(),
    ),
});
