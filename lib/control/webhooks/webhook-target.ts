/**
 * Where a webhook configured through the API may point. The audit webhook's URL is set by an
 * admin at run time, not by whoever deploys the console, so it must not become a way to make the
 * worker call the machines around it (server-side request forgery): the cloud metadata service
 * (169.254.169.254), the database, Redis, an admin port on localhost.
 *
 * A URL is refused when its host is, or resolves to, an address that is not public: loopback,
 * private (RFC 1918, fc00::/7), link-local, carrier-grade NAT, unspecified, multicast, reserved,
 * or IPv4 inside IPv6. Every address a name resolves to must be public, checked before each run
 * of sends. `WEBHOOK_PRIVATE_ADDRESSES=allow` lifts the rule, for a receiver on the same network.
 *
 * Limit: the check and the connection resolve the name separately, so a name whose DNS answer
 * changes between the two (DNS rebinding) could still reach a private address; redirects are
 * never followed (post-webhook.ts).
 */
import { lookup as dnsLookup } from "node:dns/promises";
import { BlockList, isIP } from "node:net";

const NOT_PUBLIC = new BlockList();
for (const [network, prefix] of [
  ["0.0.0.0", 8],
  ["10.0.0.0", 8],
  ["100.64.0.0", 10],
  ["127.0.0.0", 8],
  ["169.254.0.0", 16],
  ["172.16.0.0", 12],
  ["192.0.0.0", 24],
  ["192.0.2.0", 24],
  ["192.168.0.0", 16],
  ["198.18.0.0", 15],
  ["198.51.100.0", 24],
  ["203.0.113.0", 24],
  ["224.0.0.0", 4],
  ["240.0.0.0", 4],
] as const) {
  NOT_PUBLIC.addSubnet(network, prefix, "ipv4");
}
for (const [network, prefix] of [
  ["::", 128],
  ["::1", 128],
  ["100::", 64],
  ["2001:db8::", 32],
  ["fc00::", 7],
  ["fe80::", 10],
  ["ff00::", 8],
] as const) {
  NOT_PUBLIC.addSubnet(network, prefix, "ipv6");
}

/**
 * IPv4 inside IPv6 (`::ffff:a.b.c.d`, NAT64 `64:ff9b::/96`): refused whatever the IPv4 part. Not
 * in the block list, because a BlockList matches an IPv4 address against such IPv6 ranges too.
 */
const EMBEDDED_IPV4 = /^(?:::ffff:|64:ff9b::)/i;

/** True when `address` (an IPv4 or IPv6 literal) is a public unicast address. */
export function isPublicAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 0) return false;
  if (family === 6 && EMBEDDED_IPV4.test(address)) return false;
  return !NOT_PUBLIC.check(address, family === 4 ? "ipv4" : "ipv6");
}

/** The host of a URL as an address literal (brackets of IPv6 removed), or null for a name. */
function literalHost(url: URL): string | null {
  const host = url.hostname.replace(/^\[|\]$/g, "");
  return isIP(host) === 0 ? null : host;
}

/**
 * Why `url` may not be a webhook before any name is resolved (null: no objection yet): a scheme
 * other than http(s), credentials in it, or a literal host that is not public. For the settings
 * form, which answers at once.
 */
export function webhookUrlProblem(text: string, isPrivateAllowed: boolean): string | null {
  if (!URL.canParse(text)) return "is not a URL";
  const url = new URL(text);
  if (url.protocol !== "https:" && url.protocol !== "http:") {
    return "must start with https:// or http://";
  }
  if (url.username !== "" || url.password !== "") {
    return "must not carry a user name or password (the body is signed instead)";
  }
  if (isPrivateAllowed) return null;
  const literal = literalHost(url);
  if (literal !== null && !isPublicAddress(literal)) {
    return `points at ${literal}, which is not a public address (WEBHOOK_PRIVATE_ADDRESSES=allow permits it)`;
  }
  if (url.hostname === "localhost" || url.hostname.endsWith(".localhost")) {
    return "points at localhost (WEBHOOK_PRIVATE_ADDRESSES=allow permits it)";
  }
  return null;
}

/** Resolves a host name to every address it has. */
export type ResolveHost = (hostname: string) => Promise<readonly string[]>;

export const resolveHost: ResolveHost = async (hostname) =>
  (await dnsLookup(hostname, { all: true, verbatim: true })).map((entry) => entry.address);

/**
 * Why the worker may not send to `url` now (null: it may): {@link webhookUrlProblem}, then every
 * address its name resolves to must be public. A name that does not resolve is a problem too.
 */
export async function webhookTargetProblem(
  text: string,
  isPrivateAllowed: boolean,
  resolve: ResolveHost = resolveHost,
): Promise<string | null> {
  const problem = webhookUrlProblem(text, isPrivateAllowed);
  if (problem !== null || isPrivateAllowed) return problem;
  const url = new URL(text);
  if (literalHost(url) !== null) return null;
  let addresses: readonly string[];
  try {
    addresses = await resolve(url.hostname);
  } catch (error: unknown) {
    return `its host did not resolve (${error instanceof Error ? error.message : String(error)})`;
  }
  const blocked = addresses.find((address) => !isPublicAddress(address));
  if (addresses.length === 0) return "its host resolved to no address";
  return blocked === undefined
    ? null
    : `its host resolves to ${blocked}, which is not a public address`;
}
