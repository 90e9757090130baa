/**
 * A worker process that takes concurrency slots of an outbound budget and holds them until it is
 * killed, for the tests of slots freed by their TTL:
 * `node --import tsx test/integration/helpers/outbound-holder.ts <redis url> <key prefix> <budget json> <slots> <wall ms>`
 * takes `<slots>` slots (renewing them while it lives), flushes its per-minute figures with the
 * wall clock fixed at `<wall ms>`, and prints `holding` once both are done.
 */
import { createOutboundLimiter } from "@limitplane/enforcer/callers";
import { ManualClock } from "@limitplane/enforcer/limiter";
import { ZOutboundBudget } from "@limitplane/enforcer/policy";
import { Redis } from "ioredis";

const [redisUrl, keyPrefix, budgetJson, slotsText, wallMsText] = process.argv.slice(2);
if (
  redisUrl === undefined ||
  keyPrefix === undefined ||
  budgetJson === undefined ||
  slotsText === undefined ||
  wallMsText === undefined
) {
  throw new Error(
    "usage: outbound-holder.ts <redis url> <key prefix> <budget json> <slots> <wall ms>",
  );
}
const budget = ZOutboundBudget.parse(JSON.parse(budgetJson));
const redis = new Redis(redisUrl);
const limiter = createOutboundLimiter({
  client: redis,
  keyPrefix,
  budgets: [budget],
  metrics: { wallClock: new ManualClock(Number(wallMsText)) },
});
// Held, never released: the slots stay taken until their TTL after the process dies.
const permits = [];
for (let i = 0; i < Number(slotsText); i++) {
  permits.push(await limiter.acquire(`outbound:${budget.name}`));
}
await limiter.flush();
console.log("holding");
// The permits' renewals are unref'd timers: this keeps the process alive until it is killed.
setInterval(() => undefined, 60_000);
