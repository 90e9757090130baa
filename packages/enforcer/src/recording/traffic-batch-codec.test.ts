import { describe, expect, it } from "vitest";
import { setStoreTime } from "../limiter/stores/store-time";
import { mergeTrafficBatches } from "./traffic-batch-builder";
import {
  decodeTrafficBatch,
  encodeTrafficBatch,
  FLAG_ALLOWED,
  FLAG_LOCAL_STAGE,
  FLAG_STORE_TIME,
  FLAG_WITHOUT_STORE,
  NO_BINDING,
} from "./traffic-batch-codec";
import { isSampledSubject, TrafficRecorder } from "./traffic-recorder";

const batch = {
  gatewayId: "gw-1",
  sampleRate: 0.5,
  dropped: 3,
  count: 3,
  subjects: ["c:acme", "h:00ff"],
  profiles: [
    {
      tier: "pro",
      endpointClass: "default",
      cost: 1,
      policyVersion: 7,
      scopes: ["tier:pro", "ceiling"],
    },
  ],
  // Redis TIME in ms with microseconds: exact doubles must come back bit for bit.
  timeMs: Float64Array.from([1796083200123.456, 1796083200123.456, 1796083200200.001]),
  subject: Uint32Array.from([0, 0, 1]),
  profile: Uint32Array.from([0, 0, 0]),
  order: Uint16Array.from([0, 1, 0]),
  flags: Uint8Array.from([FLAG_ALLOWED | FLAG_STORE_TIME, FLAG_STORE_TIME, FLAG_ALLOWED]),
  binding: Uint8Array.from([0, 0, 255]),
};

describe("the traffic batch format", () => {
  it("round-trips every column exactly", () => {
    const decoded = decodeTrafficBatch(encodeTrafficBatch(batch));
    expect(decoded).toMatchObject({ gatewayId: "gw-1", sampleRate: 0.5, dropped: 3, count: 3 });
    expect([...decoded.timeMs]).toEqual([...batch.timeMs]);
    expect([...decoded.order]).toEqual([0, 1, 0]);
    expect([...decoded.flags]).toEqual([...batch.flags]);
    expect([...decoded.binding]).toEqual([0, 0, 255]);
    expect(decoded.subjects).toEqual(batch.subjects);
    expect(decoded.profiles).toEqual(batch.profiles);
  });

  it("refuses a truncated, overrun or foreign batch, naming what is wrong", () => {
    const bytes = encodeTrafficBatch(batch);
    expect(() => decodeTrafficBatch(bytes.subarray(0, 2))).toThrow(/shorter than its header/);
    expect(() => decodeTrafficBatch(bytes.subarray(0, bytes.length - 1))).toThrow(
      /do not hold 3 entries/,
    );
    const foreign = new TextEncoder().encode('{"v":2}');
    const framed = new Uint8Array(4 + foreign.length);
    new DataView(framed.buffer).setUint32(0, foreign.length, true);
    framed.set(foreign, 4);
    expect(() => decodeTrafficBatch(framed)).toThrow(/format 2, this build reads 1/);
  });

  it("merging keeps every entry and one dictionary entry per distinct subject", () => {
    const one = decodeTrafficBatch(encodeTrafficBatch(batch));
    const merged = mergeTrafficBatches(
      [
        { batch: one, from: 0, to: 3 },
        { batch: one, from: 1, to: 3 },
      ],
      3,
    );
    expect(merged.count).toBe(5);
    expect(merged.subjects).toEqual(["c:acme", "h:00ff"]);
    expect([...merged.subject]).toEqual([0, 0, 1, 0, 1]);
  });
});

describe("sampling by subject", () => {
  it("keeps about the rate's share of subjects, a lower rate keeping a subset", () => {
    const subjects = Array.from({ length: 2000 }, (_, n) => `c:cust-${n}`);
    const half = subjects.filter((s) => isSampledSubject(s, 0.5));
    const tenth = subjects.filter((s) => isSampledSubject(s, 0.1));
    expect(half.length).toBeGreaterThan(850);
    expect(half.length).toBeLessThan(1150);
    expect(tenth.length).toBeGreaterThan(140);
    expect(tenth.length).toBeLessThan(260);
    expect(tenth.every((s) => half.includes(s))).toBe(true);
    // One address is in or out whatever route suffix its subject carries.
    expect(isSampledSubject("a:198.51.100.7/endpoint:sign-in", 0.3)).toBe(
      isSampledSubject("a:198.51.100.7", 0.3),
    );
  });

  it("a full buffer drops and counts, and addresses never leave unhashed", async () => {
    const sent: unknown[][] = [];
    const recorder = new TrafficRecorder({
      addressHashKey: "a-test-key-of-16-chars",
      maxBufferedDecisions: 2,
      gatewayId: "gw",
      prefix: "lp:",
      redis: {
        xadd: async (...args) => void sent.push(args),
        sadd: async () => 1,
        pexpire: async () => 1,
      },
    });
    const decision = { allowed: true, scope: null, source: "store", degraded: false };
    for (const subject of ["a:198.51.100.7", "c:acme", "c:globex"]) {
      recorder.record({
        subject,
        tier: null,
        endpointClass: "default",
        cost: 1,
        policyVersion: 1,
        checks: [],
        decision,
        wallTimeMs: 1,
      });
    }
    await recorder.flush();
    const payload = sent[0]?.at(-1);
    if (!(payload instanceof Uint8Array)) throw new Error("no payload");
    const decoded = decodeTrafficBatch(payload);
    expect(decoded.dropped).toBe(1);
    expect(decoded.count).toBe(2);
    expect(decoded.subjects[0]).toMatch(/^h:[0-9a-f]{32}$/);
    expect(new TextDecoder().decode(payload)).not.toContain("198.51.100.7");
    expect(
      () =>
        new TrafficRecorder({
          addressHashKey: "short",
          gatewayId: "g",
          prefix: "",
          redis: { xadd: async () => 1, sadd: async () => 1, pexpire: async () => 1 },
        }),
    ).toThrow(/at least 16 characters/);
  });

  it("what the decision path appends comes back decoded: columns, one entry per stored subject and profile", async () => {
    const sent: unknown[][] = [];
    const recorder = new TrafficRecorder({
      addressHashKey: "a-test-key-of-16-chars",
      gatewayId: "gw",
      prefix: "lp:",
      redis: {
        xadd: async (...args) => void sent.push(args),
        sadd: async () => 1,
        pexpire: async () => 1,
      },
    });
    const checks = [{ scope: "tier:pro" }, { scope: "ceiling" }];
    const sameScopes = [{ scope: "tier:pro" }, { scope: "ceiling" }];
    const decided = (
      allowed: boolean,
      scope: string | null,
      source = "store",
      degraded = false,
    ) => ({
      allowed,
      scope,
      source,
      degraded,
    });
    const stored = decided(true, "tier:pro");
    setStoreTime(stored, { nowMs: 1_000.25, indexInCall: 2 });
    const base = {
      tier: "pro",
      endpointClass: "default",
      cost: 1,
      policyVersion: 3,
      wallTimeMs: 5,
    };
    const records = [
      { ...base, subject: "c:acme", checks, decision: stored },
      { ...base, subject: "a:198.51.100.7", checks, decision: decided(false, "ceiling") },
      // Another list with the same scopes: the same profile.
      {
        ...base,
        subject: "a:198.51.100.7/endpoint:sign-in",
        checks: sameScopes,
        decision: decided(true, null, "fallback", true),
      },
      {
        ...base,
        subject: "c:acme",
        checks,
        cost: 2,
        decision: decided(false, "tier:pro", "denial-cache"),
      },
    ];
    for (const record of records) recorder.record(record);
    await recorder.flush();
    const payload = sent[0]?.at(-1);
    if (!(payload instanceof Uint8Array)) throw new Error("no payload");
    const decoded = decodeTrafficBatch(payload);
    expect(decoded.count).toBe(4);
    expect(decoded.subjects).toEqual(["c:acme", decoded.subjects[1]]);
    expect(decoded.subjects[1]).toMatch(/^h:[0-9a-f]{32}$/);
    expect([...decoded.subject]).toEqual([0, 1, 1, 0]);
    expect(decoded.profiles).toEqual([
      {
        tier: "pro",
        endpointClass: "default",
        cost: 1,
        policyVersion: 3,
        scopes: ["tier:pro", "ceiling"],
      },
      {
        tier: "pro",
        endpointClass: "default",
        cost: 2,
        policyVersion: 3,
        scopes: ["tier:pro", "ceiling"],
      },
    ]);
    expect([...decoded.profile]).toEqual([0, 0, 0, 1]);
    expect([...decoded.timeMs]).toEqual([1_000.25, 5, 5, 5]);
    expect([...decoded.order]).toEqual([2, 0, 0, 0]);
    expect([...decoded.flags]).toEqual([
      FLAG_ALLOWED | FLAG_STORE_TIME,
      0,
      FLAG_ALLOWED | FLAG_WITHOUT_STORE,
      FLAG_LOCAL_STAGE,
    ]);
    expect([...decoded.binding]).toEqual([0, 1, NO_BINDING, 0]);
    // The next batch starts empty, with its own dictionaries.
    recorder.record({ ...base, subject: "c:globex", checks, decision: decided(true, "ceiling") });
    await recorder.flush();
    const next = sent[1]?.at(-1);
    if (!(next instanceof Uint8Array)) throw new Error("no second payload");
    const second = decodeTrafficBatch(next);
    expect(second.subjects).toEqual(["c:globex"]);
    expect([...second.binding]).toEqual([1]);
  });
});
