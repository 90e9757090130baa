/** How far a version has travelled, read from the enforcers' heartbeats in Redis. */

import { enforcerRedisNames } from "@limitplane/enforcer/publication";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { readPolicyRollout } from "@/lib/control/dry-run/read-policy-rollout";
import { unreachableRedis } from "../support/redis";
import { filePrefix } from "./helpers/gateway-processes";

let redis: Redis;

beforeAll(() => {
  redis = new Redis(inject("redisUrl"));
});

afterAll(() => {
  redis.disconnect();
});

const NOW_MS = 1_900_000_000_000;

async function heartbeat(prefix: string, enforcerId: string, atMs: number, version: string) {
  const names = enforcerRedisNames(prefix);
  await redis.zadd(names.enforcers, atMs, enforcerId);
  await redis.hset(names.enforcer(enforcerId), {
    id: enforcerId,
    heartbeatAt: String(atMs),
    version,
  });
  await redis.pexpire(names.enforcers, 60_000);
  await redis.pexpire(names.enforcer(enforcerId), 60_000);
}

describe("readPolicyRollout", () => {
  it("counts live enforcers at the version or later and names those behind; silent ones are left out", async () => {
    const prefix = filePrefix("rol");
    await heartbeat(prefix, "gw-a", NOW_MS - 500, "7");
    await heartbeat(prefix, "gw-b", NOW_MS - 1_000, "8");
    await heartbeat(prefix, "gw-c", NOW_MS - 2_000, "6");
    await heartbeat(prefix, "gw-d", NOW_MS - 3_000, "");
    await heartbeat(prefix, "gw-gone", NOW_MS - 60_000, "5");
    expect(
      await readPolicyRollout(
        { version: 7, nowMs: NOW_MS },
        { redis, prefix, clock: { nowMs: () => NOW_MS } },
      ),
    ).toEqual({
      version: 7,
      liveEnforcers: 4,
      atVersion: 2,
      behind: [
        { enforcerId: "gw-c", version: 6 },
        { enforcerId: "gw-d", version: null },
      ],
    });
  });

  it("null when Redis cannot be read", async () => {
    const down = await unreachableRedis();
    try {
      expect(
        await readPolicyRollout(
          { version: 1, nowMs: NOW_MS },
          { redis: down, prefix: "x:", clock: { nowMs: () => NOW_MS } },
        ),
      ).toBeNull();
    } finally {
      down.disconnect();
    }
  });
});
