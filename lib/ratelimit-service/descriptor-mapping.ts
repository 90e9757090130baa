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
 * Pure: no I/O. The mapping is part of the policy (`descriptorMappings`, edited in the console
 * and through `PUT /api/v1/descriptor-mappings`); the service reads the one in force from its
 * enforcer on every call, so a change applies with the policy, without a restart.
 */
import type { EnforcerRequest } from "@limitplane/enforcer";
import {
  isCustomerId,
  MAX_COST,
  normalizeClientAddress,
  type TDescriptorMapping,
} from "@limitplane/enforcer/policy";
import { rlsUnitOf } from "./rls-units";

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
  mapping: TDescriptorMapping | null,
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

/**
 * Why a descriptor's limit override was not applied (the `reason` label of
 * `limitplane_service_ignored_limit_overrides_total`):
 * - `not-allowed`: the domain's mapping says `limitOverride: ignore` (the default), or no mapping
 *   covers the domain;
 * - `unit`: the unit is UNKNOWN (Envoy validates it away; another client may send it).
 */
export type IgnoredOverrideReason = "not-allowed" | "unit";

/** A descriptor's limit override as a window, or why it is ignored. */
export function limitOverrideOf(
  mapping: TDescriptorMapping | null,
  limit: { readonly requests_per_unit: number; readonly unit: string | number },
):
  | { readonly kind: "apply"; readonly limit: number; readonly windowMs: number }
  | { readonly kind: "ignored"; readonly reason: IgnoredOverrideReason } {
  if (mapping?.limitOverride !== "apply") return { kind: "ignored", reason: "not-allowed" };
  const unit = rlsUnitOf(limit.unit);
  if (unit === undefined) return { kind: "ignored", reason: "unit" };
  return { kind: "apply", limit: limit.requests_per_unit, windowMs: unit.windowMs };
}
