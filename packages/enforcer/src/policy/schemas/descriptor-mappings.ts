/**
 * Descriptor mappings: per rate-limit domain, which entries of the descriptors Envoy sends say who
 * a request is (the customer, the tier, the method and path, the endpoint class, the client
 * address), so tiers, endpoint classes, ceilings, overrides, incidents and dry-run candidates
 * apply to Envoy traffic as to a Node gateway's. They belong to the policy: stored, audited,
 * published with it and carried by export and import.
 *
 * A policy without any mapping maps every domain with the default entry keys
 * ({@link DEFAULT_DESCRIPTOR_MAPPINGS}); one with mappings covers the domains they name, and
 * every other domain only when one of them is `*`.
 */
import { z } from "zod";
import { strict } from "../schema-fields";
import type { AddIssue } from "./rules";
import { indexUnique } from "./rules";

/** The most domain mappings a policy holds. */
export const MAX_DESCRIPTOR_MAPPINGS = 100;

/** A descriptor entry key, as Envoy writes them (`customer_id`, `remote_address`, `x-tier`). */
const entryKey = (field: string) =>
  z
    .string({ error: `${field} must be a descriptor entry key (text) or null` })
    .min(1, { error: `${field} must not be empty (null: not mapped)` })
    .max(128, { error: `${field} takes at most 128 characters` })
    .regex(/^[\x21-\x7e]+$/, { error: `${field} must be printable ASCII without spaces` });

/**
 * What the service does with a descriptor's own `limit` (Envoy's `RateLimitOverride`, set on a
 * route): `ignore` answers by the policy and counts the override as ignored; `apply` decides the
 * descriptor by that limit instead (a fixed window of `requests_per_unit` per `unit`, counted per
 * descriptor), as envoyproxy/ratelimit does. `apply` lets whoever edits the gateway's routes set
 * limits the console does not show, so it is off unless a domain asks for it.
 */
export const ZLimitOverrideMode = z.enum(["ignore", "apply"], {
  error: "limitOverride must be one of: ignore, apply",
});
export type TLimitOverrideMode = z.output<typeof ZLimitOverrideMode>;

const FIELDS = ["customer", "tier", "method", "path", "endpointClass", "clientAddress"] as const;

function mappingShape() {
  return {
    /** The RLS `domain`, or `*` for every domain no other mapping names. */
    domain: z
      .string({ error: "domain is required" })
      .min(1, { error: "domain must not be empty" })
      .max(128, { error: "domain takes at most 128 characters" })
      .regex(/^[\x21-\x7e]+$/, { error: "domain must be printable ASCII without spaces" }),
    /** The entry holding the customer id (an API key's owner). */
    customer: entryKey("customer").nullable(),
    /** The entry holding the tier; absent or unknown: the policy's default tier. */
    tier: entryKey("tier").nullable(),
    /** The entry holding the HTTP method. */
    method: entryKey("method").nullable(),
    /** The entry holding the path, matched against endpoint classes. */
    path: entryKey("path").nullable(),
    /** The entry naming the endpoint class outright. */
    endpointClass: entryKey("endpointClass").nullable(),
    /** The entry holding the client address (Envoy's `remote_address` action). */
    clientAddress: entryKey("clientAddress").nullable(),
    limitOverride: ZLimitOverrideMode,
  };
}

function refineMapping(
  mapping: { readonly [Field in (typeof FIELDS)[number]]: string | null },
  ctx: z.RefinementCtx,
): void {
  const seen = new Map<string, string>();
  for (const field of FIELDS) {
    const key = mapping[field];
    if (key === null) continue;
    const first = seen.get(key);
    if (first !== undefined) {
      ctx.addIssue({
        code: "custom",
        path: [field],
        message: `entry key "${key}" is already mapped to ${first}; an entry gives one thing`,
      });
    }
    seen.set(key, field);
  }
  if (mapping.customer === null && mapping.clientAddress === null) {
    ctx.addIssue({
      code: "custom",
      path: ["customer"],
      message: "map at least one of customer and clientAddress: they say whose budget is spent",
    });
  }
}

/** One domain's mapping as written: every entry key defaults to Envoy's usual name. */
export const ZDescriptorMapping = strict({
  ...mappingShape(),
  customer: entryKey("customer").nullable().default("customer_id"),
  tier: entryKey("tier").nullable().default("tier"),
  method: entryKey("method").nullable().default("method"),
  path: entryKey("path").nullable().default("path"),
  endpointClass: entryKey("endpointClass").nullable().default("endpoint_class"),
  clientAddress: entryKey("clientAddress").nullable().default("remote_address"),
  /** @default "ignore" */
  limitOverride: ZLimitOverrideMode.default("ignore"),
}).superRefine(refineMapping);
export type TDescriptorMapping = z.output<typeof ZDescriptorMapping>;
export type TDescriptorMappingInput = z.input<typeof ZDescriptorMapping>;

/** One domain's mapping as compiled: every field explicit. */
export const ZSnapshotDescriptorMapping = strict(mappingShape()).superRefine(refineMapping);

/** What a policy without mappings means: every domain, the default entry keys. */
export const DEFAULT_DESCRIPTOR_MAPPINGS: readonly TDescriptorMapping[] = Object.freeze([
  Object.freeze(ZDescriptorMapping.parse({ domain: "*" })),
]);

/** Domains are unique across a policy's mappings. */
export function checkDescriptorMappings(
  mappings: readonly { readonly domain: string }[],
  add: AddIssue,
): void {
  indexUnique(
    mappings,
    (mapping) => mapping.domain,
    (index, first, domain) =>
      add(
        ["descriptorMappings", index, "domain"],
        `domain "${domain}" is already mapped by descriptorMappings[${first}]`,
      ),
  );
}

/** The mapping `domain` falls under among `mappings` (its own, else `*`), or null. */
export function findDescriptorMapping<Mapping extends { readonly domain: string }>(
  mappings: readonly Mapping[],
  domain: string,
): Mapping | null {
  return (
    mappings.find((mapping) => mapping.domain === domain) ??
    mappings.find((mapping) => mapping.domain === "*") ??
    null
  );
}
