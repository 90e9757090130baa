import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { exampleSnapshot } from "../testing/policy-factory";
import { canonicalJson } from "./canonical";
import {
  entriesOfSnapshotPolicy,
  entryDigestHex,
  entrySetChecksum,
  overrideEntryKey,
  type PolicyEntry,
} from "./entries";
import { POLICY_DELTA_FORMAT, parsePolicyDelta, type TPolicyDelta } from "./policy-delta";
import { PolicyState } from "./policy-state";
import { resolveLimits } from "./resolve";

const COMPILED_AT = "2025-06-02T10:00:00.000Z";

function start(): PolicyState {
  return PolicyState.fromSnapshot(exampleSnapshot(() => {}, { version: 1 }));
}

function limit(capacity: number) {
  return {
    algorithm: "token-bucket" as const,
    capacity,
    refillPerSec: capacity / 10,
    mode: "enforce" as const,
    onStoreFailure: "open" as const,
  };
}

/** The delta a control plane would send to take `state` to `next` (same keys removed or set). */
function deltaFor(
  state: PolicyState,
  changes: readonly { key: string; value: unknown }[],
): TPolicyDelta {
  const entries = new Map([...state.entries()].map((entry) => [entry.key, entry]));
  for (const change of changes) {
    if (change.value === null) entries.delete(change.key);
    else entries.set(change.key, { key: change.key, value: change.value } as PolicyEntry);
  }
  let checksum = "";
  // The checksum of the resulting set, computed from scratch: what incremental updates must equal.
  const texts = [...entries.values()].map((entry) => [entry.key, canonicalJson(entry.value)]);
  const sum = texts.reduce(
    (total, [key, text]) =>
      (total + BigInt(`0x${entryDigestHex(key ?? "", text ?? "")}`)) % (1n << 256n),
    0n,
  );
  checksum = sum.toString(16).padStart(64, "0");
  const parsed = parsePolicyDelta({
    format: POLICY_DELTA_FORMAT,
    version: state.version + 1,
    base: state.version,
    compiledAt: COMPILED_AT,
    baseChecksum: state.checksum,
    checksum,
    changes,
  });
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
  return parsed.value;
}

const tierOf = (state: PolicyState, customerId: string) =>
  resolveLimits(
    state.prepared(),
    { customerId, tier: "free", path: "/v1/things" },
    Date.parse(COMPILED_AT),
  ).checks.find((check) => check.layer === "account");

describe("PolicyState", () => {
  it("holds a snapshot's entries with the checksum of the whole set", () => {
    const snapshot = exampleSnapshot(() => {}, { version: 3 });
    const state = PolicyState.fromSnapshot(snapshot);
    expect(state.version).toBe(3);
    expect(state.checksum).toBe(entrySetChecksum(entriesOfSnapshotPolicy(snapshot.policy)));
    expect(state.size.entries).toBe(entriesOfSnapshotPolicy(snapshot.policy).length);
  });

  it("applies deltas in order: each one's checksum, computed in O(changes), equals the whole set's", () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            customer: fc.integer({ min: 0, max: 30 }),
            capacity: fc.option(fc.integer({ min: 20, max: 5_000 }), { nil: null }),
          }),
          { minLength: 1, maxLength: 25 },
        ),
        (steps) => {
          const state = start();
          for (const step of steps) {
            const customerId = `cust-${step.customer}`;
            const key = overrideEntryKey(customerId, null);
            const isHeld = state.get(key) !== undefined;
            const value =
              step.capacity === null
                ? isHeld
                  ? null
                  : { customerId, endpointClass: null, limit: limit(100) }
                : { customerId, endpointClass: null, limit: limit(step.capacity) };
            const delta = deltaFor(state, [{ key, value }]);
            expect(state.applyDelta(delta)).toEqual({ ok: true, value: undefined });
            expect(state.checksum).toBe(entrySetChecksum(state.entries()));
            const check = tierOf(state, customerId);
            if (value === null) expect(check?.scope).toBe("tier:free");
            else
              expect(check).toMatchObject({
                scope: key,
                limit: { capacity: value.limit.capacity },
              });
          }
          expect(state.version).toBe(1 + steps.length);
        },
      ),
      { numRuns: 40 },
    );
    // Forty runs of up to 25 deltas each; on a loaded machine that is seconds.
  }, 60_000);

  it("a state loaded from a binary snapshot applies deltas exactly as one built entry by entry", () => {
    const seeded = start();
    const seed = Array.from({ length: 16 }, (_, index) => ({
      key: overrideEntryKey(`cust-${index}`, null),
      value: { customerId: `cust-${index}`, endpointClass: null, limit: limit(100 + index) },
    }));
    expect(seeded.applyDelta(deltaFor(seeded, seed)).ok).toBe(true);
    const bytes = seeded.toBinary();
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            customer: fc.integer({ min: 0, max: 30 }),
            capacity: fc.option(fc.integer({ min: 20, max: 5_000 }), { nil: null }),
          }),
          { minLength: 1, maxLength: 25 },
        ),
        (steps) => {
          const built = PolicyState.build(seeded.version, seeded.entries());
          const loaded = PolicyState.fromBinary(bytes);
          if (!built.ok || !loaded.ok) throw new Error("the seeded policy does not load");
          for (const step of steps) {
            const customerId = `cust-${step.customer}`;
            const key = overrideEntryKey(customerId, null);
            const isHeld = built.value.get(key) !== undefined;
            const value =
              step.capacity === null
                ? isHeld
                  ? null
                  : { customerId, endpointClass: null, limit: limit(100) }
                : { customerId, endpointClass: null, limit: limit(step.capacity) };
            const delta = deltaFor(built.value, [{ key, value }]);
            expect(built.value.applyDelta(delta).ok).toBe(true);
            expect(loaded.value.applyDelta(delta)).toEqual({ ok: true, value: undefined });
            expect(tierOf(loaded.value, customerId)).toEqual(tierOf(built.value, customerId));
          }
          const texts = (state: PolicyState) =>
            [...state.entries()]
              .map((entry) => `${entry.key} ${canonicalJson(entry.value)}`)
              .sort();
          expect(texts(loaded.value)).toEqual(texts(built.value));
          expect(loaded.value.checksum).toBe(entrySetChecksum(loaded.value.entries()));
          const { preparedCustomers: _built, ...builtSize } = built.value.size;
          const { preparedCustomers: _loaded, ...loadedSize } = loaded.value.size;
          expect(loadedSize).toEqual(builtSize);
        },
      ),
      { numRuns: 40 },
    );
    // Forty runs of up to 25 deltas each; on a loaded machine that is seconds.
  }, 60_000);

  it("refuses a delta that does not apply onto this version, and changes nothing", () => {
    const state = start();
    const next = deltaFor(state, [
      {
        key: "customer:acme",
        value: { customerId: "acme", endpointClass: null, limit: limit(50) },
      },
    ]);
    const skipped = { ...next, version: 3, base: 2 };
    const result = state.applyDelta(skipped);
    expect(result.ok).toBe(false);
    expect(!result.ok && result.errors[0]?.message).toBe(
      "delta 3 applies onto version 2, but this policy is at version 1",
    );
    expect(state.version).toBe(1);
    expect(state.get("customer:acme")).toBeUndefined();
  });

  it("refuses a delta whose content was altered (its checksum no longer adds up) and keeps the last good policy", () => {
    const state = start();
    const before = { version: state.version, checksum: state.checksum };
    const good = deltaFor(state, [
      {
        key: "customer:zeta",
        value: { customerId: "zeta", endpointClass: null, limit: limit(50) },
      },
    ]);
    const tampered: TPolicyDelta = {
      ...good,
      changes: [
        {
          key: "customer:zeta",
          value: { customerId: "zeta", endpointClass: null, limit: limit(5_000) },
        },
      ],
    };
    const result = state.applyDelta(tampered);
    expect(result.ok).toBe(false);
    expect(!result.ok && result.errors[0]?.message).toMatch(
      /^delta 2 promises checksum [0-9a-f]{64}, but its changes give [0-9a-f]{64}: the delta was altered or damaged$/,
    );
    expect({ version: state.version, checksum: state.checksum }).toEqual(before);
    expect(tierOf(state, "zeta")?.scope).toBe("tier:free");
    // The genuine delta still applies.
    expect(state.applyDelta(good).ok).toBe(true);
    expect(tierOf(state, "zeta")?.scope).toBe("customer:zeta");
  });

  it("refuses a value of the wrong shape, a key that does not match its value, and a reference to a missing class", () => {
    const state = start();
    const cases: { key: string; value: unknown; message: RegExp }[] = [
      {
        key: "customer:acme",
        value: { customerId: "acme", endpointClass: null, limit: { algorithm: "token-bucket" } },
        message: /capacity is required/,
      },
      {
        key: "customer:acme",
        value: { customerId: "other", endpointClass: null, limit: limit(50) },
        message: /belongs under "customer:other", not "customer:acme"/,
      },
      {
        key: "customer:acme/endpoint:nope",
        value: { customerId: "acme", endpointClass: "nope", limit: limit(50) },
        message: /there is no endpoint class "nope"/,
      },
      { key: "weird thing", value: {}, message: /names no kind of entry/ },
      {
        key: "outbound:sendgrid",
        value: { name: "sendgrid", limit: null, concurrency: null, maxWaitMs: 0, keyBy: "single" },
        message: /a budget needs a limit, a concurrency cap, or both/,
      },
    ];
    for (const { key, value, message } of cases) {
      // Checksums that add up: only the entry itself is wrong.
      const delta: TPolicyDelta = {
        ...deltaFor(start(), [{ key, value }]),
        changes: [{ key, value: value as object }],
      };
      const result = state.applyDelta(delta);
      expect(result.ok).toBe(false);
      expect(!result.ok && result.errors.map((error) => error.message).join("\n")).toMatch(message);
      expect(state.version).toBe(1);
    }
  });

  it("refuses the removal of an entry it does not hold", () => {
    const state = start();
    const delta = deltaFor(state, []);
    const result = state.applyDelta({
      ...delta,
      changes: [{ key: "customer:ghost", value: null }],
    });
    expect(!result.ok && result.errors[0]?.message).toBe(
      'removes "customer:ghost", which this policy does not hold',
    );
  });

  it("a core change (a tier's limit) is applied and re-indexed; overrides stay", () => {
    const state = start();
    const free = state.get("tier:free");
    if (free?.kind !== "tier") throw new Error("no free tier");
    const delta = deltaFor(state, [
      { key: "tier:free", value: { ...free.value, limit: { ...free.value.limit, capacity: 33 } } },
    ]);
    expect(state.applyDelta(delta).ok).toBe(true);
    expect(tierOf(state, "nobody")).toMatchObject({ scope: "tier:free", limit: { capacity: 33 } });
  });

  it("shares one limit object among overrides with equal limits", () => {
    const state = start();
    const changes = Array.from({ length: 50 }, (_, index) => ({
      key: `customer:bulk-${index}`,
      value: { customerId: `bulk-${index}`, endpointClass: null, limit: limit(100) },
    }));
    expect(state.applyDelta(deltaFor(state, changes)).ok).toBe(true);
    expect(state.size).toMatchObject({ customerOverrides: expect.any(Number) });
    expect(state.size.distinctOverrideLimits).toBeLessThan(state.size.customerOverrides);
  });

  it("holds an outbound budget under its scope, changed and removed by deltas, through a binary snapshot", () => {
    const state = start();
    const budget = {
      name: "sendgrid",
      limit: { algorithm: "token-bucket", capacity: 1, refillPerSec: 10 },
      concurrency: null,
      maxWaitMs: 30_000,
      keyBy: "account",
    };
    expect(
      state.applyDelta(deltaFor(state, [{ key: "outbound:sendgrid", value: budget }])).ok,
    ).toBe(true);
    expect(state.outboundBudget("sendgrid")).toEqual(budget);
    const raised = { ...budget, limit: { ...budget.limit, refillPerSec: 20 } };
    expect(
      state.applyDelta(deltaFor(state, [{ key: "outbound:sendgrid", value: raised }])).ok,
    ).toBe(true);
    const loaded = PolicyState.fromBinary(state.toBinary());
    if (!loaded.ok) throw new Error(JSON.stringify(loaded.errors));
    expect(loaded.value.outboundBudget("sendgrid")).toEqual(raised);
    expect(loaded.value.checksum).toBe(state.checksum);
    expect(state.applyDelta(deltaFor(state, [{ key: "outbound:sendgrid", value: null }])).ok).toBe(
      true,
    );
    expect(state.outboundBudget("sendgrid")).toBeUndefined();
  });

  it("an entry of a kind this build does not know is held for the checksum and never read", () => {
    // What a later control plane's new kind of entry does to this enforcer: the delta applies, the
    // checksum adds up, the entry survives a binary snapshot and its removal, and decisions are
    // those of the policy around it.
    const state = start();
    const before = tierOf(state, "nobody");
    const future = { key: "rollout-gate:checkout", value: { percent: 5, note: ["é", 1.5] } };
    const added = state.applyDelta(deltaFor(state, [future]));
    expect(added).toEqual({ ok: true, value: undefined });
    expect(state.get(future.key)).toEqual({ kind: "unrecognized", ...future });
    expect(tierOf(state, "nobody")).toEqual(before);
    expect(state.checksum).toBe(entrySetChecksum(state.entries()));

    const loaded = PolicyState.fromBinary(state.toBinary());
    if (!loaded.ok) throw new Error(JSON.stringify(loaded.errors));
    expect(loaded.value.checksum).toBe(state.checksum);
    expect(loaded.value.get(future.key)).toEqual({ kind: "unrecognized", ...future });

    const edited = { key: future.key, value: { percent: 50 } };
    expect(loaded.value.applyDelta(deltaFor(loaded.value, [edited])).ok).toBe(true);
    expect(
      loaded.value.applyDelta(deltaFor(loaded.value, [{ key: future.key, value: null }])).ok,
    ).toBe(true);
    expect(loaded.value.get(future.key)).toBeUndefined();
    expect(loaded.value.size.entries).toBe(start().size.entries);
  });

  it("builds a set from entries only when they add up to the checksum given", () => {
    const entries = entriesOfSnapshotPolicy(exampleSnapshot().policy);
    const checksum = entrySetChecksum(entries);
    expect(PolicyState.build(7, entries, { checksum }).ok).toBe(true);
    const missing = PolicyState.build(7, entries.slice(1), { checksum });
    expect(missing.ok).toBe(false);
  });
});
