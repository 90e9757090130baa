/**
 * The limits, written in code in the schema of the control plane's policy document: one
 * `standard` tier for API-key holders, and for anonymous callers a per-address ceiling plus a
 * sign-in endpoint held to a few attempts per address, counted apart from the address's other
 * traffic (`keyBy: "address-and-route"`).
 */
import type { TPolicyDocumentInput } from "@limitplane/enforcer/policy";

export const LIMITS = {
  defaultTier: "standard",
  defaultEndpointClass: "default",
  tiers: [
    { name: "standard", limit: { algorithm: "token-bucket", capacity: 50, refillPerSec: 10 } },
  ],
  endpointClasses: [
    { name: "default" },
    {
      name: "sign-in",
      match: [{ method: "POST", path: "/v1/sign-in" }],
      keyBy: "address-and-route",
      anonymousLimit: { algorithm: "token-bucket", capacity: 5, refillPerSec: 0.1 },
    },
  ],
  ceilings: {
    perCustomer: { algorithm: "token-bucket", capacity: 500, refillPerSec: 100 },
    perAddress: { algorithm: "sliding-window", limit: 120, windowMs: 60_000 },
  },
} satisfies TPolicyDocumentInput;
