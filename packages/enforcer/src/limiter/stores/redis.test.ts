import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { ManualClock } from "../clock";
import { ManualTimers } from "../timers";
import type { DecideInput, LimitSpec } from "../types";
import { type RedisScriptClient, RedisStore, redisLogKey, redisSubjectKey } from "./redis";
import {
  REDIS_DECIDE_BODY,
  REDIS_DECIDE_FUNCTION,
  REDIS_DECIDE_LIBRARY,
  REDIS_DECIDE_LIBRARY_NAME,
  REDIS_DECIDE_LUA,
  REDIS_DECIDE_SHA1,
  REDIS_DECIDE_VERSION,
  REDIS_OUTBOUND_BODY,
  REDIS_OUTBOUND_FUNCTIONS,
} from "./redis-decide-script";
import { storeTimeOf } from "./store-time";
import { StoreUnavailableError } from "./store-unavailable-error";

/*
 * What can be checked without a Redis: the script's identity, key names, argument checks and
 * how failures are classified. Decisions themselves are tested against the real Redis in
 * test/integration/redis-store.*.test.ts.
 */

/** Redis Cluster's key slot: CRC16/XMODEM of the hash tag (or the whole key), modulo 16384. */
function clusterSlot(key: string): number {
  const open = key.indexOf("{");
  let hashed = key;
  if (open !== -1) {
    const close = key.indexOf("}", open + 1);
    if (close > open + 1) hashed = key.slice(open + 1, close);
  }
  let crc = 0;
  for (const byte of Buffer.from(hashed, "utf8")) {
    crc ^= byte << 8;
    for (let bit = 0; bit < 8; bit++) {
      crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
    }
  }
  return crc % 16384;
}

class ReplyError extends Error {
  override name = "ReplyError";
}

type Command = "fcall" | "evalsha" | "eval" | "function load";

/**
 * A client that records calls and answers with `respond` (`FUNCTION LOAD` with "OK" unless
 * `respond` says otherwise); a Cluster client with `isCluster`, whose `nodes` are `primaries`
 * fakes that record their own loads.
 */
function fakeClient(
  respond: (command: Command, keysAndArgs: readonly string[]) => Promise<unknown>,
  isCluster = false,
  primaries = 0,
): {
  client: RedisScriptClient;
  calls: string[];
  keysOfCalls: string[][];
  loadsByPrimary: number[];
} {
  const calls: string[] = [];
  const keysOfCalls: string[][] = [];
  const loadsByPrimary = Array.from({ length: primaries }, () => 0);
  const load = async (args: readonly string[]) => {
    if (args.join(" ") !== `FUNCTION LOAD REPLACE ${REDIS_DECIDE_LIBRARY}`) {
      throw new Error(`unexpected command ${args.join(" ").slice(0, 40)}`);
    }
    calls.push("function load");
    return (await respond("function load", [])) ?? "OK";
  };
  return {
    calls,
    keysOfCalls,
    loadsByPrimary,
    client: {
      isCluster,
      callBuffer: (command, nameOrScript, numKeys, ...rest) => {
        const keysAndArgs = rest.map(String);
        if (command === "fcall" || command === "evalsha") {
          calls.push(`${command} ${nameOrScript}`);
          keysOfCalls.push(keysAndArgs.slice(0, Number(numKeys)));
          return respond(command, keysAndArgs);
        }
        if (command !== "eval") throw new Error(`unexpected command ${command}`);
        calls.push("eval");
        return respond("eval", keysAndArgs);
      },
      call: (command, ...args) => load([command, ...args]),
      ...(primaries > 0
        ? {
            nodes: () =>
              loadsByPrimary.map((_, index) => ({
                options: { host: "127.0.0.1", port: 7000 + index },
                callBuffer: () => Promise.reject(new Error("unexpected call on a node")),
                call: async (command: string, ...args: string[]) => {
                  loadsByPrimary[index] = (loadsByPrimary[index] ?? 0) + 1;
                  return load([command, ...args]);
                },
              })),
          }
        : {}),
    },
  };
}

const TOKENS: LimitSpec = { algorithm: "token-bucket", capacity: 5, refillPerSec: 1 };
const ONE_CHECK: DecideInput = {
  subject: "c:acme",
  checks: [{ scope: "tier:pro", bucket: "account", limit: TOKENS, mode: "enforce" }],
};
/** A packed reply (see the script's "Reply"): per check code and three doubles, then the time. */
function packedReply(
  checks: readonly (readonly [code: number, remaining: number, retry: number, reset: number])[],
  timeUs: number,
): Buffer {
  const reply = Buffer.alloc(checks.length * 25 + 8);
  checks.forEach(([code, remaining, retry, reset], i) => {
    reply.writeUInt8(code, i * 25);
    reply.writeDoubleLE(remaining, i * 25 + 1);
    reply.writeDoubleLE(retry, i * 25 + 9);
    reply.writeDoubleLE(reset, i * 25 + 17);
  });
  reply.writeDoubleLE(timeUs, checks.length * 25);
  return reply;
}

// One check admitted, then the call's time (Redis TIME in us).
const ADMITTED_REPLY = packedReply([[0, 4, 0, 1000]], 1796083200123456);

describe("RedisStore: the script", () => {
  it("is cached by Redis under the SHA-1 the store sends with EVALSHA", () => {
    expect(createHash("sha1").update(REDIS_DECIDE_LUA).digest("hex")).toBe(REDIS_DECIDE_SHA1);
    expect(RedisStore.scriptSha1).toBe(REDIS_DECIDE_SHA1);
  });

  it("names its library and functions by the bodies' SHA-1, and both forms run the same body", () => {
    const sha1 = createHash("sha1")
      .update(REDIS_DECIDE_BODY + REDIS_OUTBOUND_BODY)
      .digest("hex");
    expect(REDIS_DECIDE_VERSION).toBe(sha1.slice(0, 12));
    expect(REDIS_DECIDE_FUNCTION).toBe(`limitplane_decide_${REDIS_DECIDE_VERSION}`);
    expect(RedisStore.functionName).toBe(REDIS_DECIDE_FUNCTION);
    expect(REDIS_DECIDE_LIBRARY_NAME).toBe(`limitplane_${REDIS_DECIDE_VERSION}`);
    expect(REDIS_DECIDE_LIBRARY.startsWith(`#!lua name=${REDIS_DECIDE_LIBRARY_NAME}\n`)).toBe(true);
    expect(REDIS_DECIDE_LIBRARY).toContain(REDIS_DECIDE_BODY);
    expect(REDIS_DECIDE_LUA.startsWith(REDIS_DECIDE_BODY)).toBe(true);
    // The outbound functions live in the library only, after the body whose `decide` they call.
    expect(REDIS_DECIDE_LIBRARY.indexOf(REDIS_OUTBOUND_BODY)).toBeGreaterThan(
      REDIS_DECIDE_LIBRARY.indexOf(REDIS_DECIDE_BODY),
    );
    for (const name of Object.values(REDIS_OUTBOUND_FUNCTIONS)) {
      expect(name.endsWith(`_${REDIS_DECIDE_VERSION}`)).toBe(true);
      expect(REDIS_DECIDE_LIBRARY).toContain(`redis.register_function("${name}",`);
    }
    expect(REDIS_DECIDE_LUA).not.toContain(REDIS_OUTBOUND_BODY);
  });

  it("has no shebang flags line, which Redis 7.0 rejects in some forms", () => {
    expect(REDIS_DECIDE_LUA.trimStart().startsWith("#!")).toBe(false);
  });
});

describe("RedisStore: key names", () => {
  it("read as prefix, then the subject as the hash tag (a sliding log: then its bucket)", () => {
    expect(redisSubjectKey("lp:", "c:acme")).toBe("lp:rl2:{c:acme}");
    expect(redisLogKey("lp:", "c:acme", "endpoint:reports")).toBe(
      "lp:rl:{c:acme}:endpoint:reports",
    );
  });

  it("are placed by a slot function that agrees with Redis (CLUSTER KEYSLOT's documented answers)", () => {
    expect(clusterSlot("foo")).toBe(12182);
    expect(clusterSlot("somekey")).toBe(11058);
    expect(clusterSlot("{foo}bar")).toBe(12182);
  });

  it("put every bucket of one subject in one Cluster slot, whatever the names contain", () => {
    const subjects = ["c:acme", "a:198.51.100.7/endpoint:login", "x}y", "{x}", "%7B", "", "}"];
    const buckets = ["account", "ceiling", "dry-run/tier:pro", "}", "{", "{a}", ":"];
    for (const subject of subjects) {
      const keys = [
        redisSubjectKey("lp:", subject),
        ...buckets.map((b) => redisLogKey("lp:", subject, b)),
      ];
      expect(new Set(keys.map(clusterSlot)).size, `subject ${JSON.stringify(subject)}`).toBe(1);
    }
  });

  it("never collide, with separators and braces in subjects and buckets", () => {
    const parts = ["", "a", "a:b", "b", ":", "}", "{", "}:", "%", "%7D", "{}", "a}:b"];
    const seen = new Map<string, string>();
    const see = (key: string, owner: string) => {
      expect(seen.get(key) ?? owner, key).toBe(owner);
      seen.set(key, owner);
    };
    for (const subject of parts) {
      see(redisSubjectKey("p:", subject), JSON.stringify([subject]));
      for (const bucket of parts) {
        see(redisLogKey("p:", subject, bucket), JSON.stringify([subject, bucket]));
      }
    }
    expect(seen.size).toBe(parts.length + parts.length ** 2);
  });

  it("refuse a prefix holding a brace, which would move the hash tag", () => {
    const { client } = fakeClient(async () => ADMITTED_REPLY);
    expect(() => new RedisStore({ client, keyPrefix: "lp{x}:" })).toThrow(RangeError);
  });
});

describe("RedisStore: arguments", () => {
  const { client, calls } = fakeClient(async () => ADMITTED_REPLY);
  const store = new RedisStore({ client, keyPrefix: "lp:" });

  it.each<[string, LimitSpec, RegExp]>([
    ["a NaN capacity", { ...TOKENS, capacity: Number.NaN }, /capacity/],
    ["a zero refill rate", { ...TOKENS, refillPerSec: 0 }, /refillPerSec/],
    ["an infinite window", { algorithm: "fixed-window", limit: 1, windowMs: Infinity }, /windowMs/],
    ["a negative burst", { algorithm: "leaky-meter", burst: -1, drainPerSec: 1 }, /burst/],
  ])("%s throws before anything is sent", async (_name, limit, message) => {
    const before = calls.length;
    await expect(
      store.decide({ subject: "c:x", checks: [{ scope: "s", limit, mode: "enforce" }] }),
    ).rejects.toThrow(message);
    expect(calls.length).toBe(before);
  });

  it("a negative cost throws before anything is sent", async () => {
    const before = calls.length;
    await expect(store.decide({ ...ONE_CHECK, cost: -1 })).rejects.toThrow(/cost/);
    expect(calls.length).toBe(before);
  });

  it("a decision with no checks is admitted, unbound, without a round trip", async () => {
    const before = calls.length;
    expect(await store.decide({ subject: "c:x", checks: [] })).toMatchObject({
      allowed: true,
      scope: null,
    });
    expect(calls.length).toBe(before);
  });

  it("a test clock's NaN time throws", async () => {
    const clocked = new RedisStore({ client, keyPrefix: "lp:", clock: new ManualClock(NaN) });
    await expect(clocked.decide(ONE_CHECK)).rejects.toThrow(/nowMs/);
  });
});

describe("RedisStore: batching", () => {
  /** Answers each decision of a call with remaining = the number of its key's subject. */
  const echoRemaining = async (_command: string, keysAndArgs: readonly string[]) =>
    packedReply(
      keysAndArgs
        .filter((part) => part.startsWith("lp:rl2:"))
        .map((key) => [0, Number(key.replace(/^lp:rl2:\{c:(\d+)\}$/, "$1")), 0, 0] as const),
      1796083200000250,
    );

  const decisionFor = (n: number): DecideInput => ({ ...ONE_CHECK, subject: `c:${n}` });

  it("a batch leaves once it holds as many decisions as are in flight, up to maxBatchSize", async () => {
    const { client, keysOfCalls } = fakeClient(echoRemaining);
    const store = new RedisStore({ client, keyPrefix: "lp:", maxBatchSize: 64 });
    const subjects = Array.from({ length: 100 }, (_, n) => n);
    const decisions = await Promise.all(subjects.map((n) => store.decide(decisionFor(n))));
    expect(decisions.map((d) => d.remaining)).toEqual(subjects);
    // Nothing in flight: the first leaves alone at once; then each batch waits for as many as
    // are already on their way (1, 2, 4, ...), and the rest leave at the end of the turn.
    expect(keysOfCalls.map((keys) => keys.length)).toEqual([1, 1, 2, 4, 8, 16, 32, 36]);
  });

  it("decisions made in one turn share script calls of at most maxBatchSize", async () => {
    const { client, keysOfCalls } = fakeClient(echoRemaining);
    const store = new RedisStore({ client, keyPrefix: "lp:", maxBatchSize: 2 });
    const decisions = await Promise.all([1, 2, 3, 4, 5].map((n) => store.decide(decisionFor(n))));
    expect(decisions.map((d) => d.remaining)).toEqual([1, 2, 3, 4, 5]);
    expect(keysOfCalls.map((keys) => keys.length)).toEqual([1, 1, 2, 1]);
    // Each decision carries the call's time and its index in its call (the record's order).
    expect(decisions.map((d) => storeTimeOf(d))).toEqual(
      [0, 0, 0, 1, 0].map((indexInCall) => ({ nowMs: 1796083200000.25, indexInCall })),
    );
  });

  it("a decision made while a batch is in flight waits for the end of the turn, then leaves", async () => {
    const { client, keysOfCalls } = fakeClient(echoRemaining);
    const store = new RedisStore({ client, keyPrefix: "lp:", maxBatchSize: 64 });
    const first = store.decide(decisionFor(1));
    const second = store.decide(decisionFor(2));
    const third = store.decide(decisionFor(3));
    expect(keysOfCalls).toHaveLength(2);
    expect((await Promise.all([first, second, third])).map((d) => d.remaining)).toEqual([1, 2, 3]);
    expect(keysOfCalls).toHaveLength(3);
  });

  it("a failed call fails every decision in it, with StoreUnavailableError", async () => {
    const { client } = fakeClient(async () => {
      throw new Error("Connection is closed.");
    });
    const store = new RedisStore({ client, keyPrefix: "lp:", maxBatchSize: 8 });
    const results = await Promise.allSettled([1, 2, 3].map((n) => store.decide(decisionFor(n))));
    for (const result of results) {
      expect(result).toMatchObject({ status: "rejected" });
      if (result.status === "rejected") expect(result.reason).toBeInstanceOf(StoreUnavailableError);
    }
  });

  it("on Redis Cluster a batch holds one hash slot's decisions only, and every decision is answered", async () => {
    const { client, keysOfCalls } = fakeClient(echoRemaining, true);
    const store = new RedisStore({ client, keyPrefix: "lp:", maxBatchSize: 64 });
    const subjects = Array.from({ length: 200 }, (_, n) => n);
    const decisions = await Promise.all(subjects.map((n) => store.decide(decisionFor(n))));
    expect(decisions.map((d) => d.remaining)).toEqual(subjects);
    for (const keys of keysOfCalls) {
      expect(new Set(keys.map(clusterSlot)).size, keys.join(" ")).toBe(1);
    }
    // Subjects of one slot still share calls: one call per slot, but for the two decisions that
    // left at once, alone, before anything was in flight.
    const distinctSlots = new Set(
      subjects.map((n) => clusterSlot(redisSubjectKey("lp:", `c:${n}`))),
    );
    expect(keysOfCalls.length).toBeGreaterThanOrEqual(distinctSlots.size);
    expect(keysOfCalls.length).toBeLessThanOrEqual(distinctSlots.size + 2);
  });

  it("a CROSSSLOT, MOVED or CLUSTERDOWN reply is a StoreUnavailableError, never the raw reply", async () => {
    for (const reply of [
      "CROSSSLOT Keys in request don't hash to the same slot",
      "MOVED 3999 127.0.0.1:7001",
      "ASK 3999 127.0.0.1:7001",
      "CLUSTERDOWN The cluster is down",
      "TRYAGAIN Multiple keys request during rehashing of slot",
    ]) {
      const { client } = fakeClient(async () => {
        throw new ReplyError(reply);
      }, true);
      const store = new RedisStore({ client, keyPrefix: "lp:", maxBatchSize: 64 });
      const error = await store.decide(ONE_CHECK).catch((e: unknown) => e);
      expect(error, reply).toBeInstanceOf(StoreUnavailableError);
    }
  });

  it.each([0, 1.5, Number.NaN])("maxBatchSize %s is refused", (maxBatchSize) => {
    const { client } = fakeClient(echoRemaining);
    expect(() => new RedisStore({ client, keyPrefix: "lp:", maxBatchSize })).toThrow(RangeError);
  });
});

describe("RedisStore: calls held back (LeaseWanted.maxDelayMs)", () => {
  /**
   * Answers every decision of a call as the script would lay it out: per check, admitted with
   * remaining = the number of the subject; a leasing decision ("l" head) then grants what it
   * asked for; the call's time last.
   */
  const answerAll = async (_command: string, keysAndArgs: readonly string[]) => {
    const subjects = keysAndArgs
      .filter((part) => part.startsWith("lp:rl2:"))
      .map((key) => Number(key.replace(/^lp:rl2:\{c:(\d+)\}$/, "$1")));
    const args = keysAndArgs.filter((part) => !part.startsWith("lp:rl2:")).slice(1);
    const parts: Buffer[] = [];
    let at = 0;
    for (const subject of subjects) {
      const head = (args[at] ?? "").split(" ");
      const checkCount = Number(head[3]);
      at += 1 + checkCount;
      const checks = packedReply(
        Array.from({ length: checkCount }, () => [0, subject, 0, 0] as const),
        0,
      ).subarray(0, checkCount * 25);
      parts.push(checks);
      if (head[0] === "l") {
        const lease = Buffer.alloc(16);
        lease.writeDoubleLE(Number(head[4]), 0);
        lease.writeDoubleLE(Number(head[5]), 8);
        parts.push(lease);
      }
    }
    const time = Buffer.alloc(8);
    time.writeDoubleLE(1796083200000250, 0);
    return Buffer.concat([...parts, time]);
  };
  const input = (n: number): DecideInput => ({ ...ONE_CHECK, subject: `c:${n}` });
  const lease = (maxDelayMs: number) => ({ units: 5, lifeMs: 1_000, maxDelayMs });
  const subjectsOf = (keys: readonly string[]) =>
    keys.map((key) => key.replace(/^lp:rl2:\{(.*)\}$/, "$1"));
  const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

  function heldStore(maxBatchSize = 64, isCluster = false) {
    const timers = new ManualTimers();
    const { client, keysOfCalls } = fakeClient(answerAll, isCluster);
    const store = new RedisStore({ client, keyPrefix: "lp:", maxBatchSize, timers });
    return { store, timers, calls: () => keysOfCalls.map(subjectsOf) };
  }

  it("calls made turn after turn wait until the first one's delay is up, then leave in one call", async () => {
    const { store, timers, calls } = heldStore();
    const answers = [];
    for (const n of [1, 2, 3]) {
      answers.push(store.decideLeasing(input(n), lease(20)));
      await nextTurn();
    }
    timers.advance(19);
    await nextTurn();
    expect(calls()).toEqual([]);
    timers.advance(1);
    expect(calls()).toEqual([["c:1", "c:2", "c:3"]]);
    // Each gets its own part of the reply.
    expect(
      (await Promise.all(answers)).map((a) => [a.decision.remaining, a.units, a.lifeMs]),
    ).toEqual([
      [1, 5, 1_000],
      [2, 5, 1_000],
      [3, 5, 1_000],
    ]);
  });

  it("they ride, first, with the next batch of their slot, and no timer is left behind", async () => {
    const { store, timers, calls } = heldStore();
    const held = [store.decideLeasing(input(1), lease(60_000))];
    await nextTurn();
    held.push(store.decideLeasing(input(2), lease(60_000)));
    await nextTurn();
    const plain = store.decide(input(9));
    expect(calls()).toEqual([["c:1", "c:2", "c:9"]]);
    expect((await plain).remaining).toBe(9);
    expect((await Promise.all(held)).map((a) => a.decision.remaining)).toEqual([1, 2]);
    expect(timers.pendingCount).toBe(0);
  });

  it("riders fill a batch only up to maxBatchSize; the others wait for their delay", async () => {
    const { store, timers, calls } = heldStore(2);
    const held = [1, 2, 3].map((n) => store.decideLeasing(input(n), lease(50)));
    const plain = store.decide(input(9));
    expect(calls()).toEqual([["c:1", "c:9"]]);
    await plain;
    timers.advance(50);
    expect(calls()).toEqual([
      ["c:1", "c:9"],
      ["c:2", "c:3"],
    ]);
    expect((await Promise.all(held)).map((a) => a.decision.remaining)).toEqual([1, 2, 3]);
  });

  it("a shorter delay brings the send forward for every call held", async () => {
    const { store, timers, calls } = heldStore();
    const held = [store.decideLeasing(input(1), lease(100))];
    timers.advance(5);
    held.push(store.decideLeasing(input(2), lease(10)));
    timers.advance(9);
    expect(calls()).toEqual([]);
    timers.advance(1);
    expect(calls()).toEqual([["c:1", "c:2"]]);
    await Promise.all(held);
  });

  it("sendHeld sends every call held at once (a connection about to close), and its timer is gone", async () => {
    const { store, timers, calls } = heldStore(2);
    const held = [1, 2, 3].map((n) => store.decideLeasing(input(n), lease(20)));
    store.sendHeld();
    expect(calls()).toEqual([["c:1", "c:2"], ["c:3"]]);
    expect(timers.pendingCount).toBe(0);
    expect((await Promise.all(held)).map((a) => a.units)).toEqual([5, 5, 5]);
  });

  it("without batching (maxBatchSize 1) nothing is held: the call leaves at once", async () => {
    const { store, calls } = heldStore(1);
    const answer = store.decideLeasing(input(1), lease(60_000));
    expect(calls()).toEqual([["c:1"]]);
    expect((await answer).units).toBe(5);
  });

  it("on Redis Cluster only decisions of the same slot ride together", async () => {
    const { store, timers, calls } = heldStore(64, true);
    const slotOf = (n: number) => clusterSlot(redisSubjectKey("lp:", `c:${n}`));
    let sameSlot = 2;
    while (slotOf(sameSlot) !== slotOf(1)) sameSlot++;
    let otherSlot = 2;
    while (slotOf(otherSlot) === slotOf(1)) otherSlot++;
    const held = [1, otherSlot].map((n) => store.decideLeasing(input(n), lease(30)));
    const plain = store.decide(input(sameSlot));
    expect(calls()).toEqual([["c:1", `c:${sameSlot}`]]);
    await plain;
    timers.advance(30);
    expect(calls()).toEqual([["c:1", `c:${sameSlot}`], [`c:${otherSlot}`]]);
    await Promise.all(held);
  });

  it("a call that fails fails the decisions riding with it, with StoreUnavailableError", async () => {
    const timers = new ManualTimers();
    const { client } = fakeClient(async () => {
      throw new Error("Connection is closed.");
    });
    const store = new RedisStore({ client, keyPrefix: "lp:", maxBatchSize: 8, timers });
    const held = store.decideLeasing(input(1), lease(60_000)).catch((e: unknown) => e);
    await nextTurn();
    const plain = store.decide(input(2)).catch((e: unknown) => e);
    expect(await held).toBeInstanceOf(StoreUnavailableError);
    expect(await plain).toBeInstanceOf(StoreUnavailableError);
  });

  it.each([-1, Number.NaN, 60_001, Number.POSITIVE_INFINITY, "5"])(
    "maxDelayMs %s is refused, naming the field, and nothing is sent",
    async (maxDelayMs) => {
      const { store, calls } = heldStore();
      const wanted = { units: 5, lifeMs: 1_000, maxDelayMs: maxDelayMs as number };
      await expect(store.decideLeasing(input(1), wanted)).rejects.toThrow(/lease\.maxDelayMs/);
      expect(calls()).toEqual([]);
    },
  );
});

describe("RedisStore: the function library", () => {
  const FUNCTION_MISSING = "ERR Function not found";

  it("decides with FCALL of the library's function", async () => {
    const { client, calls } = fakeClient(async () => ADMITTED_REPLY);
    const store = new RedisStore({ client, keyPrefix: "lp:" });
    expect(await store.decide(ONE_CHECK)).toMatchObject({ allowed: true, remaining: 4 });
    expect(calls).toEqual([`fcall ${REDIS_DECIDE_FUNCTION}`]);
    expect(store.scriptForm).toBe("function");
  });

  it("decisions that all find the function missing load the library once, then call again", async () => {
    let isLoaded = false;
    let release = () => {};
    const uploaded = new Promise<void>((resolve) => {
      release = resolve;
    });
    const { client, calls } = fakeClient(async (command) => {
      if (command === "function load") {
        await uploaded;
        isLoaded = true;
        return "OK";
      }
      if (!isLoaded) throw new ReplyError(FUNCTION_MISSING);
      return ADMITTED_REPLY;
    });
    const store = new RedisStore({ client, keyPrefix: "lp:" });
    const decisions = Array.from({ length: 10 }, () => store.decide(ONE_CHECK));
    // After this turn's microtasks every decision has had its refusal and waits on the one load.
    await new Promise((resolve) => setImmediate(resolve));
    expect(calls.filter((call) => call.startsWith("fcall"))).toHaveLength(10);
    release();
    expect((await Promise.all(decisions)).every((d) => d.allowed)).toBe(true);
    expect(calls.filter((call) => call === "function load")).toHaveLength(1);
    expect(calls.filter((call) => call.startsWith("fcall"))).toHaveLength(20);
  });

  it("on a Cluster the library is loaded on every primary", async () => {
    let isLoaded = false;
    const { client, loadsByPrimary } = fakeClient(
      async (command) => {
        if (command === "function load") {
          isLoaded = true;
          return "OK";
        }
        if (!isLoaded) throw new ReplyError(FUNCTION_MISSING);
        return ADMITTED_REPLY;
      },
      true,
      3,
    );
    const store = new RedisStore({ client, keyPrefix: "lp:" });
    expect(await store.decide(ONE_CHECK)).toMatchObject({ allowed: true });
    expect(loadsByPrimary).toEqual([1, 1, 1]);
  });

  it.each([
    ["a Redis without functions", "ERR unknown command 'FCALL', with args beginning with: "],
    [
      "an ACL without FUNCTION",
      "NOPERM this user has no permissions to run the 'function|load' command",
    ],
  ])("%s: the store falls back to EVALSHA for good", async (_name, refusal) => {
    const { client, calls } = fakeClient(async (command) => {
      if (command === "fcall") throw new ReplyError(FUNCTION_MISSING);
      if (command === "function load") throw new ReplyError(refusal);
      return ADMITTED_REPLY;
    });
    const store = new RedisStore({ client, keyPrefix: "lp:" });
    expect(await store.decide(ONE_CHECK)).toMatchObject({ allowed: true, remaining: 4 });
    expect(store.scriptForm).toBe("eval");
    expect(await store.decide(ONE_CHECK)).toMatchObject({ allowed: true });
    expect(calls).toEqual([
      `fcall ${REDIS_DECIDE_FUNCTION}`,
      "function load",
      `evalsha ${REDIS_DECIDE_SHA1}`,
      `evalsha ${REDIS_DECIDE_SHA1}`,
    ]);
  });

  it("a load that gets no answer is an outage (StoreUnavailableError), and the next call tries again", async () => {
    let loads = 0;
    const { client } = fakeClient(async (command) => {
      if (command === "fcall") throw new ReplyError(FUNCTION_MISSING);
      loads++;
      throw new Error("Connection is closed.");
    });
    const store = new RedisStore({ client, keyPrefix: "lp:" });
    await expect(store.decide(ONE_CHECK)).rejects.toBeInstanceOf(StoreUnavailableError);
    await expect(store.decide(ONE_CHECK)).rejects.toBeInstanceOf(StoreUnavailableError);
    expect(loads).toBe(2);
    expect(store.scriptForm).toBe("function");
  });

  it("a bug in the library (any other refusal to load it) propagates as it is", async () => {
    const bug = new ReplyError("ERR Error registering functions: user_function:9: syntax error");
    const { client } = fakeClient(async (command) => {
      if (command === "fcall") throw new ReplyError(FUNCTION_MISSING);
      throw bug;
    });
    const store = new RedisStore({ client, keyPrefix: "lp:" });
    await expect(store.decide(ONE_CHECK)).rejects.toBe(bug);
    expect(store.scriptForm).toBe("function");
  });

  it("a scriptForm other than function or eval is refused, naming the option", () => {
    const { client } = fakeClient(async () => ADMITTED_REPLY);
    expect(
      () => new RedisStore({ client, keyPrefix: "lp:", scriptForm: "lua" as unknown as "eval" }),
    ).toThrow(/scriptForm/);
  });
});

describe("RedisStore: failures", () => {
  it("a NOSCRIPT reply is answered by EVAL, which caches the script again", async () => {
    const { client, calls } = fakeClient(async (command) => {
      if (command === "evalsha") throw new ReplyError("NOSCRIPT No matching script.");
      return ADMITTED_REPLY;
    });
    const store = new RedisStore({ client, keyPrefix: "lp:", scriptForm: "eval" });
    expect(await store.decide(ONE_CHECK)).toMatchObject({ allowed: true, remaining: 4 });
    expect(calls).toEqual([`evalsha ${REDIS_DECIDE_SHA1}`, "eval"]);
  });

  it("decisions that all meet NOSCRIPT re-send the script once, then retry by SHA", async () => {
    let isCached = false;
    let release = () => {};
    const uploaded = new Promise<void>((resolve) => {
      release = resolve;
    });
    const { client, calls } = fakeClient(async (command) => {
      if (command === "eval") {
        await uploaded;
        isCached = true;
      } else if (!isCached) {
        throw new ReplyError("NOSCRIPT No matching script.");
      }
      return ADMITTED_REPLY;
    });
    const store = new RedisStore({ client, keyPrefix: "lp:", scriptForm: "eval" });
    const decisions = Array.from({ length: 10 }, () => store.decide(ONE_CHECK));
    await new Promise((resolve) => setImmediate(resolve));
    release();
    expect((await Promise.all(decisions)).every((d) => d.allowed)).toBe(true);
    expect(calls.filter((call) => call === "eval")).toHaveLength(1);
    expect(calls.filter((call) => call.startsWith("evalsha"))).toHaveLength(19);
  });

  it.each([
    ["a lost connection", new Error("Connection is closed.")],
    ["no connection and no offline queue", new Error("Stream isn't writeable")],
    ["a command timeout", new Error("Command timed out")],
    ["a server still loading its data", new ReplyError("LOADING Redis is loading")],
    ["a replica after a failover", new ReplyError("READONLY You can't write against a replica")],
    ["a server out of memory", new ReplyError("OOM command not allowed")],
  ])("%s is a StoreUnavailableError carrying the cause", async (_name, cause) => {
    const { client } = fakeClient(async () => {
      throw cause;
    });
    const store = new RedisStore({ client, keyPrefix: "lp:" });
    const error = await store.decide(ONE_CHECK).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StoreUnavailableError);
    expect(error).toMatchObject({ cause });
  });

  it("a script error is a bug, not an outage: it propagates as it is", async () => {
    const bug = new ReplyError("ERR user_script:1: attempt to index a nil value");
    const { client } = fakeClient(async () => {
      throw bug;
    });
    const store = new RedisStore({ client, keyPrefix: "lp:" });
    await expect(store.decide(ONE_CHECK)).rejects.toBe(bug);
  });

  it.each([
    ["an array (a script of another release)", [0, "4", "0", "1000", 1796083200123456]],
    ["bytes short of a decision", ADMITTED_REPLY.subarray(0, 20)],
    ["bytes past it", Buffer.concat([ADMITTED_REPLY, Buffer.alloc(1)])],
  ])("a malformed reply (%s) throws instead of becoming a decision", async (_name, reply) => {
    const { client } = fakeClient(async () => reply);
    const store = new RedisStore({ client, keyPrefix: "lp:" });
    await expect(store.decide(ONE_CHECK)).rejects.toThrow(/unexpected script reply/);
  });
});
