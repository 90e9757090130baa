/**
 * The client's address as a route handler can know it. Next.js gives handlers no socket; its
 * server fills `X-Forwarded-For` with the peer's address when the request has none. Behind a
 * reverse proxy that appends to the header (nginx `$proxy_add_x_forwarded_for`, most load
 * balancers), the LAST entry is the address that proxy saw, the only one a client cannot forge;
 * so that is the one used. Exposed directly, a client may send its own header, and the
 * per-address sign-in limit can then be dodged (the per-account one cannot): run the console
 * behind a proxy that sets the header.
 */
import { normalizeClientAddress } from "@limitplane/enforcer/policy";

export function clientAddressOf(request: Request): string | null {
  const forwarded = request.headers.get("x-forwarded-for");
  const last = forwarded?.split(",").at(-1)?.trim();
  const candidate = last || request.headers.get("x-real-ip")?.trim();
  if (!candidate) return null;
  return normalizeClientAddress(candidate);
}
