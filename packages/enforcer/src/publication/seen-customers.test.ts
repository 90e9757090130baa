import { describe, expect, it } from "vitest";
import {
  readSeenCustomer,
  readSeenCustomerIds,
  readSeenOverflow,
  type SeenReadingRedis,
} from "./seen-customers";

/** A Redis that answers from fixed data, as a Redis holding foreign or damaged keys would. */
function fakeRedis(data: {
  zset?: string[];
  score?: string | null;
  hash?: Record<string, string>;
}): SeenReadingRedis {
  return {
    zrevrange: async () => data.zset ?? [],
    zscore: async () => data.score ?? null,
    hgetall: async () => data.hash ?? {},
  };
}

describe("the seen-customer readers", () => {
  it("skip members that are not customer ids and scores that are not times", async () => {
    const redis = fakeRedis({
      zset: ["acme", "1700000000000", "../x", "1700000000001", "<b>", "1", "hooli", "NaN"],
    });
    expect(await readSeenCustomerIds(redis, "lp:")).toEqual([
      { id: "acme", lastSeenAtMs: 1_700_000_000_000 },
    ]);
  });

  it("read a customer nobody reported as null, never as seen at time 0", async () => {
    expect(await readSeenCustomer(fakeRedis({}), "lp:", "ghost")).toBeNull();
    expect(await readSeenCustomer(fakeRedis({ score: "x" }), "lp:", "ghost")).toBeNull();
    expect(await readSeenCustomer(fakeRedis({ score: "5" }), "lp:", "a b")).toBeNull();
  });

  it("keep tier fields that are tier names or none, newest first, and skip the rest", async () => {
    const redis = fakeRedis({
      score: "300",
      hash: { pro: "200", "-": "300", "Not A Tier": "400", free: "-1", gold: "1e3" },
    });
    expect(await readSeenCustomer(redis, "lp:", "acme")).toEqual({
      id: "acme",
      lastSeenAtMs: 300,
      tiers: [
        { tier: null, lastSeenAtMs: 300 },
        { tier: "pro", lastSeenAtMs: 200 },
      ],
    });
  });

  it("sum the overflow of the enforcers that reported one", async () => {
    const redis = fakeRedis({ hash: { a: "7", b: "0", c: "lots", d: "3" } });
    expect(await readSeenOverflow(redis, "lp:", 1)).toEqual({ total: 10, enforcers: 2 });
  });
});
