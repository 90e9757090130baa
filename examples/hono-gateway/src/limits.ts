/**
 * The limits, written in code in the schema of the control plane's policy document: a `basic`
 * and a `plus` tier, and a reports endpoint that costs 10 units a call, with a budget of its own
 * per tier on top of the account's.
 */
import type { TPolicyDocumentInput } from "@limitplane/enforcer/policy";

export const LIMITS = {
  defaultTier: "basic",
  defaultEndpointClass: "default",
  tiers: [
    { name: "basic", limit: { algorithm: "token-bucket", capacity: 60, refillPerSec: 5 } },
    { name: "plus", limit: { algorithm: "token-bucket", capacity: 600, refillPerSec: 50 } },
  ],
  endpointClasses: [
    { name: "default" },
    {
      name: "reports",
      match: [{ method: "GET", path: "/v1/reports/*" }],
      cost: 10,
      limits: {
        basic: { algorithm: "token-bucket", capacity: 30, refillPerSec: 0.5 },
        plus: { algorithm: "token-bucket", capacity: 300, refillPerSec: 5 },
      },
    },
  ],
  ceilings: {
    perCustomer: { algorithm: "token-bucket", capacity: 2_000, refillPerSec: 400 },
    perAddress: { algorithm: "token-bucket", capacity: 30, refillPerSec: 3 },
  },
} satisfies TPolicyDocumentInput;
