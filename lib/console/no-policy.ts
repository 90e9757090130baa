/**
 * Gateways that run no policy admit every request (or refuse them all, by their `withoutPolicy`
 * option): the fleet says so loudly, from what their heartbeats report. Pure.
 */

export interface NoPolicyFacts {
  /** The published head; null when this Redis (under this key prefix) holds none. */
  readonly published: { readonly version: number } | null;
  readonly enforcers: readonly {
    readonly id: string;
    readonly version: number | null;
    /** What its heartbeat says while it runs none; absent from an enforcer too old to say. */
    readonly noPolicy?: { readonly action: "admit" | "reject"; readonly decisions: number } | null;
  }[];
}

export interface NoPolicyNotice {
  readonly title: string;
  readonly detail: string;
  /** The gateways without a policy. */
  readonly enforcerIds: readonly string[];
}

/** What to say when any reporting gateway runs no policy; null when every one runs one. */
export function describeNoPolicy(facts: NoPolicyFacts): NoPolicyNotice | null {
  const without = facts.enforcers.filter((enforcer) => enforcer.version === null);
  if (without.length === 0) return null;
  const total = facts.enforcers.length;
  const isRefusing = without.every((enforcer) => enforcer.noPolicy?.action === "reject");
  const decisions = without.reduce((sum, enforcer) => sum + (enforcer.noPolicy?.decisions ?? 0), 0);
  const title =
    without.length === total
      ? `${total === 1 ? "The only gateway runs" : `All ${total} gateways run`} no policy: every request is ${isRefusing ? "refused" : "admitted"}`
      : `${without.length} of ${total} gateways run no policy: they ${isRefusing ? "refuse" : "admit"} every request`;
  const detail =
    facts.published === null
      ? "No policy is published in this Redis under this key prefix. Check the gateways' REDIS_URL and key prefix against the console's; a fresh installation publishes once the worker runs."
      : `Version v${facts.published.version} is published and these gateways have not loaded it: they may have just started, or refused it (see their snapshot errors).`;
  const counted =
    decisions > 0
      ? ` ${decisions} ${decisions === 1 ? "request was" : "requests were"} ${isRefusing ? "refused" : "admitted unchecked"} so far.`
      : "";
  return {
    title,
    detail: `${detail}${counted}`,
    enforcerIds: without.map((enforcer) => enforcer.id),
  };
}
