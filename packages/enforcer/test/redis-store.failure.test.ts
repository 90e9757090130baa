import { once } from "node:events";
import type { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RedisStore } from "../src/limiter/stores/redis";
import { REDIS_DECIDE_LIBRARY_NAME } from "../src/limiter/stores/redis-decide-script";
import { StoreUnavailableError } from "../src/limiter/stores/store-unavailable-error";
import type { DecideInput } from "../src/limiter/types";
import { OwnRedisServer } from "../src/testing/redis-server";
import { RELEASED_TIMEOUT_MS, readyRedis } from "./support/redis";

/*
 * Failures, on a redis-server of this file's own (never the shared one): FUNCTION FLUSH and
 * SCRIPT FLUSH (the decide code lost, in each of its forms), a user not allowed to load
 * functions, a server that stops, one that hangs, and one that comes back. Production time (Redis TIME) throughout.
 * No test measures a duration: "fails fast" means the decision rejects with the typed error
 * instead of waiting, which the decisions client guarantees by having no offline queue and a
 * 250 ms command timeout.
 */

const input = (subject: string): DecideInput => ({
  subject,
  checks: [
    {
      scope: "tier:pro",
      bucket: "account",
      limit: { algorithm: "token-bucket", capacity: 1_000, refillPerSec: 1 },
      mode: "enforce",
    },
    {
      scope: "ceiling",
      bucket: "ceiling",
      limit: { algorithm: "sliding-log", limit: 1_000, windowMs: 60_000 },
      mode: "enforce",
    },
  ],
});

async function untilReady(client: Redis): Promise<void> {
  if (client.status !== "ready") await once(client, "ready");
}

describe("RedisStore when Redis fails", () => {
  let server: OwnRedisServer;
  let client: Redis;
  let admin: Redis;
  let store: RedisStore;

  beforeAll(async () => {
    server = await OwnRedisServer.start();
    client = await readyRedis("decisions", server.url, "", RELEASED_TIMEOUT_MS);
    admin = await readyRedis("control", server.url);
    store = new RedisStore({ client, keyPrefix: "failure:" });
  });

  afterAll(async () => {
    client.disconnect();
    admin.disconnect();
    await server.stop();
  });

  /** Whether the Redis holds the decide library the store loads. */
  async function hasLibrary(): Promise<boolean> {
    const listed = await admin.call("FUNCTION", "LIST", "LIBRARYNAME", REDIS_DECIDE_LIBRARY_NAME);
    return Array.isArray(listed) && listed.length > 0;
  }

  it("after FUNCTION FLUSH, even with decisions in flight, no decision fails: the library is loaded again", async () => {
    expect((await store.decide(input("c:fflush"))).allowed).toBe(true);
    expect(await hasLibrary()).toBe(true);

    await admin.call("FUNCTION", "FLUSH");
    expect(await hasLibrary()).toBe(false);
    const afterFlush = await Promise.all(
      Array.from({ length: 100 }, (_, i) => store.decide(input(`c:fflush-${i % 7}`))),
    );
    expect(afterFlush.every((d) => d.allowed)).toBe(true);

    // A flush landing between decisions already sent.
    const racing = Array.from({ length: 50 }, (_, i) => store.decide(input(`c:frace-${i % 5}`)));
    await admin.call("FUNCTION", "FLUSH");
    const more = Array.from({ length: 50 }, (_, i) => store.decide(input(`c:frace-${i % 5}`)));
    const decisions = await Promise.all([...racing, ...more]);
    expect(decisions.filter((d) => d.allowed)).toHaveLength(100);
    expect(await hasLibrary()).toBe(true);
    expect(store.scriptForm).toBe("function");
  });

  it("a user whose ACL forbids FUNCTION: the library cannot be loaded, and the store decides with EVALSHA from then on", async () => {
    await admin.call(
      "ACL",
      "SETUSER",
      "no-functions",
      "on",
      "nopass",
      "~*",
      "&*",
      "+@all",
      "-function",
    );
    await admin.call("FUNCTION", "FLUSH");
    const url = new URL(server.url);
    url.username = "no-functions";
    url.password = "any";
    const limited = await readyRedis("decisions", url.href, "", RELEASED_TIMEOUT_MS);
    try {
      const store = new RedisStore({ client: limited, keyPrefix: "failure:acl:" });
      const decisions = await Promise.all(
        Array.from({ length: 20 }, (_, i) => store.decide(input(`c:acl-${i % 3}`))),
      );
      expect(decisions.every((d) => d.allowed)).toBe(true);
      expect(store.scriptForm).toBe("eval");
      expect(await hasLibrary()).toBe(false);
      expect(await admin.script("EXISTS", RedisStore.scriptSha1)).toEqual([1]);
    } finally {
      limited.disconnect();
      await admin.call("ACL", "DELUSER", "no-functions");
    }
  });

  it("the EVAL form: after SCRIPT FLUSH, even with decisions in flight, no decision fails", async () => {
    const store = new RedisStore({ client, keyPrefix: "failure:", scriptForm: "eval" });
    expect((await store.decide(input("c:flush"))).allowed).toBe(true);
    expect(await admin.script("EXISTS", RedisStore.scriptSha1)).toEqual([1]);

    await admin.script("FLUSH");
    expect(await admin.script("EXISTS", RedisStore.scriptSha1)).toEqual([0]);
    const afterFlush = await Promise.all(
      Array.from({ length: 100 }, (_, i) => store.decide(input(`c:flush-${i % 7}`))),
    );
    expect(afterFlush.every((d) => d.allowed)).toBe(true);

    // A flush landing between decisions already sent.
    const racing = Array.from({ length: 50 }, (_, i) => store.decide(input(`c:race-${i % 5}`)));
    await admin.script("FLUSH");
    const more = Array.from({ length: 50 }, (_, i) => store.decide(input(`c:race-${i % 5}`)));
    const decisions = await Promise.all([...racing, ...more]);
    expect(decisions.filter((d) => d.allowed)).toHaveLength(100);
    expect(await admin.script("EXISTS", RedisStore.scriptSha1)).toEqual([1]);
  });

  it("a hung Redis fails the decision with StoreUnavailableError, within the command timeout", async () => {
    server.pause();
    try {
      const error = await store.decide(input("c:hung")).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(StoreUnavailableError);
      expect(String(error)).toMatch(/timed out/);
    } finally {
      server.resume();
    }
    expect((await store.decide(input("c:hung"))).allowed).toBe(true);
  });

  it("a stopped Redis fails decisions at once with StoreUnavailableError; after a restart they work", async () => {
    await server.stop();
    // The client notices the closed socket; from then on nothing is queued or awaited.
    if (client.status === "ready") await once(client, "close");
    for (let i = 0; i < 3; i++) {
      const error = await store.decide(input("c:down")).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(StoreUnavailableError);
    }
    await expect(store.peek(input("c:down"))).rejects.toBeInstanceOf(StoreUnavailableError);

    // A restarted Redis is empty: the script is no longer cached, and EVAL brings it back.
    await server.restart();
    await untilReady(client);
    const decision = await store.decide(input("c:down"));
    expect(decision).toMatchObject({ allowed: true, remaining: 999 });
  });
});
