import type { TDescriptorRule } from "@limitplane/enforcer/policy";

/** A rule's limit in words: `5 per 86400 s (fixed-window)`, `unlimited`, `deny (0 requests)`. */
export function describeRuleLimit(limit: TDescriptorRule["limit"]): string {
  if (limit === "unlimited") return "unlimited";
  if (limit === "deny") return "deny (0 requests)";
  switch (limit.algorithm) {
    case "fixed-window":
    case "sliding-log":
    case "sliding-window":
      return `${limit.limit} per ${limit.windowMs / 1000} s (${limit.algorithm})`;
    case "token-bucket":
      return `burst ${limit.capacity}, ${limit.refillPerSec}/s (token bucket)`;
    case "leaky-meter":
      return `burst ${limit.burst}, ${limit.drainPerSec}/s (leaky meter)`;
    default: {
      const unknown: never = limit;
      return JSON.stringify(unknown);
    }
  }
}

/** A pattern or value level by level: `tenant=acme, user`. */
export function formatLevels(
  levels: readonly { readonly key: string; readonly value: string | null }[],
): string {
  return levels
    .map((level) => (level.value === null ? level.key : `${level.key}=${level.value}`))
    .join(", ");
}
