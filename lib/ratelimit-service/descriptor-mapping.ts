/**
 * Which descriptor entries say who a gateway's request is, per rate-limit domain: the customer,
 * the tier, the method and path (so endpoint classes match), the endpoint class itself, and the
 * client address. A descriptor is the list of entries one Envoy `rate_limits` action set produced;
 * each descriptor is decided on its own, as envoyproxy/ratelimit does.
 *
 * A descriptor with neither a customer nor a client address entry is not covered: it is answered
 * OK and counted by its keys, so an operator sees what the gateway sends (limits keyed by other
 * descriptors are descriptor rules, a later addition to the policy).
 *
 * Pure: no I/O. The service loads the mapping from a JSON file (`RATELIMIT_SERVICE_MAPPING`).
 */
import type { EnforcerRequest } from "@limitplane/enforcer";
import { isCustomerId, MAX_COST, normalizeClientAddress } from "@limitplane/enforcer/policy";
import { z } from "zod";

/** A descriptor entry key, as Envoy writes them (`customer_id`, `remote_address`, `x-tier`). */
const entryKey = (field: string) =>
  z
    .string({ error: `${field} must be a descriptor entry key` })
    .min(1, { error: `${field} must not be empty` })
    .max(128, { error: `${field} takes at most 128 characters` })
    .regex(/^[\x21-\x7e]+$/, { error: `${field} must be printable ASCII without spaces` });

/** How one domain's descriptors map onto a request the policy resolves. */
export const ZDomainMapping = z
  .strictObject({
    /** The RLS `domain`, or `*` for every domain no other mapping names. */
    domain: z
      .string({ error: "domain is required" })
      .min(1, { error: "domain must not be empty" })
      .max(128, { error: "domain takes at most 128 characters" }),
    /** The entry holding the customer id (an API key's owner). @default "customer_id" */
    customer: entryKey("customer").nullable().default("customer_id"),
    /** The entry holding the tier; absent or unknown: the policy's default tier. @default "tier" */
    tier: entryKey("tier").nullable().default("tier"),
    /** The entry holding the HTTP method. @default "method" */
    method: entryKey("method").nullable().default("method"),
    /** The entry holding the path, matched against endpoint classes. @default "path" */
    path: entryKey("path").nullable().default("path"),
    /** The entry naming the endpoint class outright. @default "endpoint_class" */
    endpointClass: entryKey("endpointClass").nullable().default("endpoint_class"),
    /** The entry holding the client address (Envoy's `remote_address` action). */
    clientAddress: entryKey("clientAddress").nullable().default("remote_address"),
  })
  .superRefine((mapping, ctx) => {
    const keys = [
      mapping.customer,
      mapping.tier,
      mapping.method,
      mapping.path,
      mapping.endpointClass,
      mapping.clientAddress,
    ].filter((key): key is string => key !== null);
    const seen = new Set<string>();
    for (const key of keys) {
      if (seen.has(key)) {
        ctx.addIssue({ code: "custom", message: `entry key "${key}" is mapped twice` });
      }
      seen.add(key);
    }
    if (mapping.customer === null && mapping.clientAddress === null) {
      ctx.addIssue({
        code: "custom",
        path: ["customer"],
        message: "map at least one of customer and clientAddress: they say whose budget is spent",
      });
    }
  });
export type TDomainMapping = z.output<typeof ZDomainMapping>;

/** The service's whole mapping: one entry per domain. */
export const ZDescriptorMapping = z
  .strictObject({
    domains: z
      .array(ZDomainMapping)
      .min(1, { error: "domains must list at least one domain mapping" })
      .max(100, { error: "domains takes at most 100 domain mappings" }),
  })
  .superRefine((mapping, ctx) => {
    const seen = new Map<string, number>();
    mapping.domains.forEach((domain, index) => {
      const first = seen.get(domain.domain);
      if (first !== undefined) {
        ctx.addIssue({
          code: "custom",
          path: ["domains", index, "domain"],
          message: `domain "${domain.domain}" is already mapped at domains[${first}]`,
        });
      }
      seen.set(domain.domain, index);
    });
  });
export type TDescriptorMapping = z.output<typeof ZDescriptorMapping>;
export type TDescriptorMappingInput = z.input<typeof ZDescriptorMapping>;

/** Every domain, with the default entry keys. */
export const DEFAULT_DESCRIPTOR_MAPPING: TDescriptorMapping = ZDescriptorMapping.parse({
  domains: [{ domain: "*" }],
});

/** The mapping for `domain`, or null when none applies. */
export function domainMappingOf(
  mapping: TDescriptorMapping,
  domain: string,
): TDomainMapping | null {
  return (
    mapping.domains.find((entry) => entry.domain === domain) ??
    mapping.domains.find((entry) => entry.domain === "*") ??
    null
  );
}

/** One descriptor entry, as the RLS request carries it. */
export interface DescriptorEntry {
  readonly key: string;
  readonly value: string;
}

/**
 * What a descriptor asks for: an enforcer request, or `uncovered` with the keys it had (for the
 * metrics), or `invalid` with the entry to blame.
 */
export type DescriptorRequest =
  | { readonly kind: "request"; readonly request: EnforcerRequest }
  | { readonly kind: "uncovered"; readonly keys: string }
  | { readonly kind: "invalid"; readonly field: string; readonly message: string };

/**
 * The enforcer request one descriptor stands for, charged `cost` units. `field` is the
 * descriptor's path in the RLS request (`descriptors[2]`), for error messages.
 */
export function requestOfDescriptor(
  mapping: TDomainMapping | null,
  entries: readonly DescriptorEntry[],
  cost: number,
  field: string,
): DescriptorRequest {
  const keys = entries.map((entry) => entry.key).join(",");
  if (mapping === null) return { kind: "uncovered", keys };
  let customerId: string | null = null;
  let tier: string | null = null;
  let method = "GET";
  let path = "/";
  let endpointClass: string | null = null;
  let clientAddress: string | null = null;
  for (const [index, entry] of entries.entries()) {
    const at = `${field}.entries[${index}].value`;
    switch (entry.key) {
      case mapping.customer:
        if (!isCustomerId(entry.value)) {
          return {
            kind: "invalid",
            field: at,
            message: "is not a customer id (letters, digits and ._:@-, at most 128)",
          };
        }
        customerId = entry.value;
        break;
      case mapping.tier:
        tier = entry.value;
        break;
      case mapping.method:
        method = entry.value.toUpperCase();
        break;
      case mapping.path:
        if (!entry.value.startsWith("/")) {
          return { kind: "invalid", field: at, message: "a path must start with /" };
        }
        path = entry.value;
        break;
      case mapping.endpointClass:
        endpointClass = entry.value;
        break;
      case mapping.clientAddress: {
        const normalized = normalizeClientAddress(entry.value);
        if (normalized === null) {
          return { kind: "invalid", field: at, message: "is not an IP address" };
        }
        clientAddress = normalized;
        break;
      }
      default:
        break;
    }
  }
  if (customerId === null && clientAddress === null) return { kind: "uncovered", keys };
  const request: {
    customerId: string | null;
    tier: string | null;
    method: string;
    path: string;
    clientAddress: string | null;
    cost: number;
    endpointClass?: string;
  } = { customerId, tier, method, path, clientAddress, cost };
  if (endpointClass !== null) request.endpointClass = endpointClass;
  return { kind: "request", request };
}

/** The largest `hits_addend` accepted: the policy's largest cost. */
export const MAX_HITS_ADDEND = MAX_COST;
