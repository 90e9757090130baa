/**
 * `durability: "replicated"` against a real primary and replica (both this file's own, on free
 * ports; never the shared Redis), through a failover that loses writes on purpose:
 *
 * 1. Both in sync: a replicated limit and a default one each admit a few requests; the replicated
 *    one also grants a lease (charged on the replica too, before it is granted).
 * 2. The replica is cut off and keeps what it has (`REPLICAOF NO ONE` on it: what a replica
 *    partitioned away, or far behind, holds when the failover comes). The default limit keeps
 *    admitting on the primary alone; every replicated decision fails with
 *    `StoreUnavailableError` (NOREPLICAS after `waitMs`), for the failure policy to decide.
 * 3. The primary dies (SIGKILL) and the cut-off replica takes over, as Sentinel or a managed
 *    service would promote it, holding only what it had; a new replica follows it. Both limits
 *    are asked until they refuse.
 *
 * Asserted: the replicated limit never admits more than its capacity over the whole run, lease
 * units counted as admitted; the default limit admits exactly its capacity plus what it admitted
 * while the replica lagged, which is the overshoot docs/failover.md states (the units charged in
 * the last L before the primary died). The buckets refill one unit a day, so nothing refills.
 */
import type { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { RedisStore } from "../src/limiter/stores/redis";
import { StoreUnavailableError } from "../src/limiter/stores/store-unavailable-error";
import type { DecideInput, LimitCheck } from "../src/limiter/types";
import { OwnRedisServer } from "../src/testing/redis-server";
import { waitFor } from "../src/testing/wait-for";
import { readyRedis } from "./support/redis";

const CAPACITY = 20;
const prefix = `${inject("redisKeyPrefix")}dur:`;
const bucket = (durability?: "replicated"): LimitCheck => ({
  scope: "tier:pro",
  bucket: "account",
  limit: { algorithm: "token-bucket", capacity: CAPACITY, refillPerSec: 1 / 86_400 },
  mode: "enforce",
  ...(durability === undefined ? {} : { durability }),
});
const replicatedInput: DecideInput = { subject: "c:replicated", checks: [bucket("replicated")] };
const defaultInput: DecideInput = { subject: "c:default", checks: [bucket()] };

let primary: OwnRedisServer;
let replica: OwnRedisServer;
/** The promoted replica's own replica, started after the failover. */
let second: OwnRedisServer | undefined;
const clients: Redis[] = [];

async function client(url: string): Promise<Redis> {
  const made = await readyRedis("decisions", url, "", 5_000);
  clients.push(made);
  return made;
}

/** A store on `url`, its replicated decisions on a connection of their own. */
async function storeOn(url: string): Promise<RedisStore> {
  return new RedisStore({
    client: await client(url),
    keyPrefix: prefix,
    // Generous: a busy machine can hold an acknowledgement back; an absent replica fails it anyway.
    replicated: { client: await client(url), waitMs: 2_000 },
  });
}

beforeAll(async () => {
  primary = await OwnRedisServer.start();
  replica = await OwnRedisServer.start({ replicaOf: primary.port });
  const watcher = await client(replica.url);
  await waitFor(
    "the replica to be in sync",
    async () =>
      String(await watcher.info("replication")).includes("master_link_status:up")
        ? true
        : undefined,
    { timeoutMs: 30_000, intervalMs: 50 },
  );
}, 60_000);

afterAll(async () => {
  for (const made of clients) made.disconnect();
  await Promise.all([primary?.stop(), replica?.stop(), second?.stop()]);
});

describe('durability "replicated" across a failover that loses writes', () => {
  it("never admits over the limit, while the default limit overshoots by exactly what the replica lacked", async () => {
    const before = await storeOn(primary.url);

    // 1. In sync: 3 each, and a lease on the replicated limit.
    let replicatedAdmitted = 0;
    let defaultAdmitted = 0;
    for (let i = 0; i < 3; i++) {
      if ((await before.decide(replicatedInput)).allowed) replicatedAdmitted++;
      if ((await before.decide(defaultInput)).allowed) defaultAdmitted++;
    }
    const leased = await before.decideLeasing(replicatedInput, { units: 4, lifeMs: 60_000 });
    expect(leased.decision.allowed).toBe(true);
    expect(leased.units).toBeGreaterThan(0);
    // The gateway spends every leased unit: count them as admitted.
    replicatedAdmitted += 1 + leased.units;

    // 2. The replica is cut off. The default limit admits on the primary alone; a replicated
    // decision fails and is left to the failure policy (here: not admitted).
    const promoter = await client(replica.url);
    await promoter.call("REPLICAOF", "NO", "ONE");
    let lostDefault = 0;
    for (let i = 0; i < 5; i++) {
      if ((await before.decide(defaultInput)).allowed) lostDefault++;
    }
    const refused = await Promise.allSettled([
      before.decide(replicatedInput),
      before.decideLeasing(replicatedInput, { units: 4, lifeMs: 60_000 }),
    ]);
    for (const result of refused) {
      expect(result.status).toBe("rejected");
      if (result.status === "rejected") {
        expect(result.reason).toBeInstanceOf(StoreUnavailableError);
        expect(String(result.reason)).toContain("NOREPLICAS");
      }
    }
    defaultAdmitted += lostDefault;

    // 3. The primary dies; the replica (which never saw phase 2) takes over.
    await primary.kill();
    // A replica for the new primary, as Sentinel reconfigures the survivors to follow it: until
    // one acknowledges, replicated decisions are left to the failure policy.
    second = await OwnRedisServer.start({ replicaOf: replica.port });
    const watcher = await client(second.url);
    await waitFor(
      "the new primary's replica to be in sync",
      async () =>
        String(await watcher.info("replication")).includes("master_link_status:up")
          ? true
          : undefined,
      { timeoutMs: 30_000, intervalMs: 50 },
    );
    const after = await storeOn(replica.url);
    for (const [input, count] of [
      [replicatedInput, (n: number) => (replicatedAdmitted += n)],
      [defaultInput, (n: number) => (defaultAdmitted += n)],
    ] as const) {
      for (;;) {
        const decision = await after.decide(input);
        if (!decision.allowed) break;
        count(1);
      }
    }

    // Replicated: every unit it admitted (leased ones too) was on the replica before it was
    // admitted, so the promoted server charged them all: never over.
    expect(replicatedAdmitted).toBeLessThanOrEqual(CAPACITY);
    // Default: capacity plus exactly the admissions the replica lacked.
    expect(defaultAdmitted).toBe(CAPACITY + lostDefault);
    console.log(
      `replicated durability: replicated limit admitted ${replicatedAdmitted} of capacity ${CAPACITY}; default limit admitted ${defaultAdmitted} (capacity ${CAPACITY}, ${lostDefault} admitted while the replica lagged and lost with the primary)`,
    );
  }, 60_000);
});
