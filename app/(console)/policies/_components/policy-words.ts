/**
 * Plain words for the parts of a limit that formatLimit leaves out (its mode and what happens when
 * Redis fails) and for scopes. Pure: used by server pages and by the edit forms.
 */

import type {
  TDurability,
  TOnStoreFailure,
  TPolicyLimit,
  TPolicyMode,
} from "@limitplane/enforcer/policy";
import { formatAlgorithm, formatLimit } from "@/lib/console/format";

export const MODE_WORDS: Record<TPolicyMode, string> = {
  enforce: "enforced",
  "dry-run": "dry-run: counted, never rejects",
  off: "off: the layer falls back to the rule below",
};

export const ON_STORE_FAILURE_WORDS: Record<TOnStoreFailure, string> = {
  open: "admit (fail open)",
  closed: "reject (fail closed)",
  local: "a local quota per gateway",
};

export const DURABILITY_WORDS: Record<TDurability, string> = {
  async: "may lose the last admissions (fastest)",
  replicated: "wait for a replica (never over the limit)",
};

/** `"10/s, bursts of 20 (token bucket)"`; null → `"none"`. */
export function describePolicyLimit(limit: TPolicyLimit | null): string {
  if (limit === null) return "none";
  return `${formatLimit(limit)} (${formatAlgorithm(limit.algorithm)})`;
}

/** The mode and failure policy in one line: `"enforced; if Redis is down: admit (fail open)"`. */
export function describeLimitBehaviour(limit: TPolicyLimit): string {
  const behaviour = `${MODE_WORDS[limit.mode]}; if Redis is down: ${ON_STORE_FAILURE_WORDS[limit.onStoreFailure]}`;
  return limit.durability === "replicated"
    ? `${behaviour}; across a failover: ${DURABILITY_WORDS.replicated}`
    : behaviour;
}

/** How far a limit's budget reaches: `"global"` (one budget for all regions) or `"per region"`. */
export function describeBudgetReach(limit: TPolicyLimit): string {
  return limit.global === true ? "global" : "per region";
}

/**
 * `"per region → global"` when an edit marks a limit global or unmarks it; null when it does not
 * (or the limit is added or removed, which the before and after already say).
 */
export function describeGlobalChange(
  before: TPolicyLimit | null,
  after: TPolicyLimit | null,
): string | null {
  if (before === null || after === null) return null;
  if ((before.global === true) === (after.global === true)) return null;
  return `${describeBudgetReach(before)} → ${describeBudgetReach(after)}`;
}

/** What a scope means, in words: `tier:pro/endpoint:reports` → `pro customers on reports`. */
export function describeScope(scope: string): string {
  if (scope === "ceiling") return "every customer (per-customer ceiling)";
  if (scope === "address") return "every anonymous address (per-address ceiling)";
  const ceilingEndpoint = /^ceiling\/endpoint:(.+)$/.exec(scope);
  if (ceilingEndpoint) return `every customer on ${ceilingEndpoint[1]} (endpoint ceiling)`;
  const addressEndpoint = /^address\/endpoint:(.+)$/.exec(scope);
  if (addressEndpoint) return `anonymous requests to ${addressEndpoint[1]}, per address`;
  const tierEndpoint = /^tier:([^/]+)\/endpoint:(.+)$/.exec(scope);
  if (tierEndpoint) return `${tierEndpoint[1]} customers on ${tierEndpoint[2]}`;
  const tier = /^tier:([^/]+)$/.exec(scope);
  if (tier) return `${tier[1]} customers, all endpoints`;
  return scope;
}
