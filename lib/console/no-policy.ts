/**
 * Gateways that run no policy admit every request: the fleet says so loudly. Pure.
 */

export interface NoPolicyFacts {
  /** The published head; null when this Redis (under this key prefix) holds none. */
  readonly published: { readonly version: number } | null;
  readonly enforcers: readonly { readonly id: string; readonly version: number | null }[];
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
  const title =
    without.length === total
      ? `${total === 1 ? "The only gateway runs" : `All ${total} gateways run`} no policy: every request is admitted`
      : `${without.length} of ${total} gateways run no policy: they admit every request`;
  const detail =
    facts.published === null
      ? "No policy is published in this Redis under this key prefix. Check the gateways' REDIS_URL and key prefix against the console's; a fresh installation publishes once the worker runs."
      : `Version v${facts.published.version} is published and these gateways have not loaded it: they may have just started, or refused it (see their snapshot errors).`;
  return { title, detail, enforcerIds: without.map((enforcer) => enforcer.id) };
}
