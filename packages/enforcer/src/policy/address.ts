/**
 * Client addresses as subjects. Two spellings of one client must give one subject, or a caller
 * could dodge a per-address limit by reformatting; and an IPv6 client controls a whole /64 (2^64
 * addresses), so per-address limits on IPv6 key on the /64 network, not the single address.
 */

/** IPv6 clients are keyed by this many leading bits: one subscriber's network. */
export const IPV6_SUBJECT_PREFIX_BITS = 64;

/**
 * The subject form of a client address, or null when it is not an IP address.
 *
 * - IPv4: dotted decimal (`198.51.100.7`); a `:port` suffix is dropped; octets with leading zeros
 *   are refused (some parsers read them as octal).
 * - IPv4-mapped IPv6 (`::ffff:198.51.100.7`, what a dual-stack socket reports): the IPv4 form.
 * - IPv6: the /64 network, hex lowercase without leading zeros: `2001:db8:0:1::/64`. Brackets, a
 *   `:port` after brackets and a `%zone` are dropped.
 */
export function normalizeClientAddress(address: string): string | null {
  let text = address.trim().toLowerCase();
  if (text.startsWith("[")) {
    const close = text.indexOf("]");
    if (close === -1) return null;
    const after = text.slice(close + 1);
    if (after !== "" && !/^:\d{1,5}$/.test(after)) return null;
    text = text.slice(1, close);
  } else if (/^[0-9.]+:\d{1,5}$/.test(text)) {
    text = text.slice(0, text.indexOf(":"));
  }
  const zone = text.indexOf("%");
  if (zone !== -1) text = text.slice(0, zone);
  if (text.includes(":")) return normalizeIpv6(text);
  return parseIpv4(text) === null ? null : text;
}

function parseIpv4(text: string): number[] | null {
  const parts = text.split(".");
  if (parts.length !== 4) return null;
  const octets: number[] = [];
  for (const part of parts) {
    if (!/^(?:0|[1-9]\d{0,2})$/.test(part)) return null;
    const value = Number(part);
    if (value > 255) return null;
    octets.push(value);
  }
  return octets;
}

function normalizeIpv6(text: string): string | null {
  const hextets = parseIpv6(text);
  if (hextets === null) return null;
  const isMapped = hextets.slice(0, 5).every((value) => value === 0) && hextets[5] === 0xffff;
  if (isMapped) {
    const high = hextets[6] ?? 0;
    const low = hextets[7] ?? 0;
    return [high >> 8, high & 0xff, low >> 8, low & 0xff].join(".");
  }
  const network = hextets
    .slice(0, IPV6_SUBJECT_PREFIX_BITS / 16)
    .map((value) => value.toString(16));
  return `${network.join(":")}::/${IPV6_SUBJECT_PREFIX_BITS}`;
}

/** The eight 16-bit groups of an IPv6 address (with `::` and a dotted IPv4 tail), or null. */
function parseIpv6(text: string): number[] | null {
  let head = text;
  const tail: number[] = [];
  const lastColon = text.lastIndexOf(":");
  const last = text.slice(lastColon + 1);
  if (last.includes(".")) {
    const octets = parseIpv4(last);
    if (octets === null) return null;
    const [a = 0, b = 0, c = 0, d = 0] = octets;
    tail.push((a << 8) | b, (c << 8) | d);
    head = text.slice(0, lastColon + 1);
    if (head.endsWith(":") && !head.endsWith("::")) head = head.slice(0, -1);
  }
  const halves = head.split("::");
  if (halves.length > 2) return null;
  const parseGroups = (part: string): number[] | null => {
    if (part === "") return [];
    const groups: number[] = [];
    for (const group of part.split(":")) {
      if (!/^[0-9a-f]{1,4}$/.test(group)) return null;
      groups.push(Number.parseInt(group, 16));
    }
    return groups;
  };
  const left = parseGroups(halves[0] ?? "");
  const right = halves.length === 2 ? parseGroups(halves[1] ?? "") : [];
  if (left === null || right === null) return null;
  const known = left.length + right.length + tail.length;
  if (halves.length === 2) {
    if (known > 7) return null;
    return [...left, ...new Array<number>(8 - known).fill(0), ...right, ...tail];
  }
  return known === 8 ? [...left, ...tail] : null;
}

/**
 * The client address from `X-Forwarded-For` when `hops` proxies are trusted: the `hops`-th entry
 * from the right. Null when no proxy is trusted, the header is absent, or it has fewer entries
 * than trusted hops (the request did not come through all of them).
 */
export function forwardedClientAddress(
  forwardedFor: string | null | undefined,
  hops: number,
): string | null {
  if (hops === 0 || forwardedFor === null || forwardedFor === undefined) return null;
  const entries = forwardedFor
    .split(",")
    .map((entry) => entry.trim())
    .filter((entry) => entry !== "");
  const entry = entries[entries.length - hops];
  return entry === undefined ? null : entry;
}
