/**
 * A separate process making policy changes, for races across processes:
 * `node --conditions=react-server --import tsx test/integration/helpers/change-process.ts <database url> <customer id>...`
 * gives each customer an account override (capacity 100 + its position), all at once, and prints
 * one JSON line per change: `{"customerId", "policyVersion"}`.
 */
import { createCustomerOverride } from "@/lib/control/customer-override/create-customer-override";
import { systemClock } from "@/lib/server/composition";
import { createPrisma } from "@/lib/server/db";

const [databaseUrl, ...customerIds] = process.argv.slice(2);
if (databaseUrl === undefined)
  throw new Error("usage: change-process.ts <database url> <customer id>...");
const db = createPrisma({ databaseUrl, poolSize: customerIds.length });
const results = await Promise.all(
  customerIds.map((customerId, index) =>
    createCustomerOverride(
      {
        customerId,
        endpointClass: null,
        limit: { algorithm: "token-bucket", capacity: 100 + index, refillPerSec: 10 },
      },
      { actor: { type: "system", id: null, name: "race" }, reason: "concurrent change" },
      { db, publisher: null, clock: systemClock },
    ),
  ),
);
for (const [index, result] of results.entries()) {
  console.log(
    JSON.stringify({ customerId: customerIds[index], policyVersion: result.policyVersion }),
  );
}
await db.$disconnect();
