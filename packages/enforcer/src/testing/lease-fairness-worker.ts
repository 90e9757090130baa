/**
 * One gateway process of `lease-fairness.ts`: for each order read from stdin (one JSON line) it
 * makes a DecisionEngine as a gateway runs it (the Redis store batching, the local stage on,
 * leases on or off), sends the order's customer requests at the order's steady rate from the
 * order's start instant, and writes one JSON line: what it offered and admitted, when Redis
 * decided its first request, Redis's time once every decision was answered, and what its leases
 * did once every unit they were granted was spent or given back. Run with `node --import tsx`,
 * FAIRNESS_REDIS_URL and FAIRNESS_PREFIX set.
 */
import { once } from "node:events";
import { createInterface } from "node:readline";
import { DecisionEngine } from "../enforcer/decision-engine";
import { RedisStore } from "../limiter/stores/redis";
import { storeTimeOf } from "../limiter/stores/store-time";
import { ManualTimers } from "../limiter/timers";
import { prepareSnapshot } from "../policy/prepare";
import { createRedisClient } from "../publication/redis-clients";
import type { FairnessOrder, FairnessReport } from "./lease-fairness";
import { exampleSnapshot } from "./policy-factory";

const url = process.env.FAIRNESS_REDIS_URL ?? "";
// What is measured is what leases admit, not this machine's load: a slow answer is waited for
// (gateways fail a call after 250 ms and answer by the failure policy, which a busy test machine
// would otherwise turn into rejections nobody asked about).
const decisions = createRedisClient("decisions", { url, commandTimeoutMs: 5_000 });
const control = createRedisClient("control", { url });
if (decisions.status !== "ready") await once(decisions, "ready");

/** The example policy with the pro tier's limit set to `limit`. */
function snapshotWith(limit: FairnessOrder["limit"]) {
  return prepareSnapshot(
    exampleSnapshot((policy) => {
      const pro = policy.tiers.find((tier) => tier.name === "pro");
      if (pro === undefined) throw new Error("the example policy has no pro tier");
      pro.limit = limit;
    }),
  );
}

async function redisTimeMs(): Promise<number> {
  const [seconds, micros] = (await control.time()) as [number | string, number | string];
  return Number(seconds) * 1_000 + Number(micros) / 1_000;
}

/** Engines kept holding their leases (a `hold` order): never stopped. */
const held: DecisionEngine[] = [];

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));

async function run(order: FairnessOrder): Promise<FairnessReport> {
  const snapshot = snapshotWith(order.limit);
  const engine = new DecisionEngine({
    store: new RedisStore({
      client: decisions,
      keyPrefix: process.env.FAIRNESS_PREFIX ?? "",
      maxBatchSize: 64,
    }),
    snapshot: () => snapshot,
    expectedGateways: 3,
    leases: order.leases ? {} : false,
    // To be killed holding its leases: timers that never fire, so no sweep gives them back.
    ...(order.hold === true ? { timers: new ManualTimers() } : {}),
  });
  const request = { customerId: order.customerId, tier: "pro", method: "GET", path: "/v1/things" };
  const total = Math.floor((order.ratePerSec * order.durationMs) / 1_000);
  const intervalMs = order.ratePerSec > 0 ? 1_000 / order.ratePerSec : 0;
  let admitted = 0;
  let fromLeases = 0;
  let firstStoreMs: number | null = null;
  const answers: Promise<void>[] = [];
  const sentAtMs: number[] = [];
  await sleep(order.startAtMs - Date.now());
  let sent = 0;
  while (sent < total) {
    // Every request due by now leaves now (a late timer sends its backlog at once, as clients
    // queued behind a busy gateway would arrive); then wait for the next one's instant.
    const due = Math.min(total, Math.floor((Date.now() - order.startAtMs) / intervalMs) + 1);
    for (; sent < due; sent++) {
      const isFirst = sent === 0;
      sentAtMs.push(Date.now());
      answers.push(
        engine.check(request).then((result) => {
          if (result.decision.allowed) admitted++;
          if (result.decision.source === "lease") fromLeases++;
          if (isFirst) firstStoreMs = storeTimeOf(result.decision)?.nowMs ?? null;
        }),
      );
    }
    if (sent < total) await sleep(order.startAtMs + sent * intervalMs - Date.now());
  }
  await Promise.all(answers);
  const endStoreMs = await redisTimeMs();
  const unsettled = () => {
    const figures = engine.leases?.figures();
    if (figures === undefined) return { held: 0, waiting: 0 };
    const held =
      figures.grantedUnits -
      figures.admitted -
      figures.returnedUnits -
      figures.expiredUnits -
      figures.returningUnits;
    return { held, waiting: figures.inFlight + figures.returningUnits };
  };
  if (order.hold === true) {
    // Units still held stay held: this process is about to be killed.
    while (unsettled().waiting > 0) await sleep(5);
    held.push(engine);
  } else {
    // Wait until every unit granted was spent or given back (grants end within their lifetime).
    for (let left = unsettled(); left.held + left.waiting > 0; left = unsettled()) await sleep(10);
  }
  const figures = engine.leases?.figures();
  return {
    offered: total,
    admitted,
    fromLeases,
    firstStoreMs,
    endStoreMs,
    lastSentAtMs: sentAtMs.at(-1) ?? null,
    grantedUnits: figures?.grantedUnits ?? 0,
    returnedUnits: figures?.returnedUnits ?? 0,
    expiredUnits: figures?.expiredUnits ?? 0,
    heldUnits: unsettled().held,
    sentAtMs,
  };
}

const lines = createInterface({ input: process.stdin });
process.stdout.write(`${JSON.stringify({ ready: true })}\n`);
for await (const line of lines) {
  if (line === "stop") break;
  const report = await run(JSON.parse(line) as FairnessOrder).catch(
    (error: unknown): FairnessReport => ({
      offered: 0,
      admitted: 0,
      fromLeases: 0,
      firstStoreMs: null,
      endStoreMs: 0,
      lastSentAtMs: null,
      grantedUnits: 0,
      returnedUnits: 0,
      expiredUnits: 0,
      heldUnits: 0,
      sentAtMs: [],
      error: String(error),
    }),
  );
  process.stdout.write(`${JSON.stringify(report)}\n`);
}
decisions.disconnect();
control.disconnect();
