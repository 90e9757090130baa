/**
 * The limits, written in code in the schema of the control plane's policy document
 * (`TPolicyDocumentInput`): a free and a pro tier by API key, a stricter search endpoint on the
 * free tier, and per-address limits for anonymous callers. Leave `policy` out of
 * `createEnforcer` to follow the policy a Limitplane control plane publishes instead.
 */
import type { TPolicyDocumentInput } from "@limitplane/enforcer/policy";

export const LIMITS = {
  defaultTier: "free",
  defaultEndpointClass: "default",
  tiers: [
    { name: "free", limit: { algorithm: "token-bucket", capacity: 10, refillPerSec: 1 } },
    { name: "pro", limit: { algorithm: "token-bucket", capacity: 100, refillPerSec: 20 } },
  ],
  endpointClasses: [
    { name: "default" },
    {
      name: "search",
      match: [{ method: "GET", path: "/v1/search" }],
      cost: 2,
      limits: { free: { algorithm: "sliding-window", limit: 30, windowMs: 60_000 } },
    },
  ],
  ceilings: {
    perCustomer: { algorithm: "token-bucket", capacity: 1_000, refillPerSec: 200 },
    perAddress: { algorithm: "token-bucket", capacity: 20, refillPerSec: 2 },
  },
} satisfies TPolicyDocumentInput;
