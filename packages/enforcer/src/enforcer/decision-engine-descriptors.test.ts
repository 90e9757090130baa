import { describe, expect, it } from "vitest";
import { MemoryStore } from "../limiter/stores/memory";
import { ManualTimers } from "../limiter/timers";
import type { DecideInput, LayeredDecision, LimiterStore } from "../limiter/types";
import { prepareSnapshot } from "../policy/prepare";
import type { TDescriptorRuleInput } from "../policy/schemas";
import { exampleSnapshot } from "../testing/policy-factory";
import { DecisionEngine } from "./decision-engine";

const WALL_T0 = Date.parse("2026-01-01T00:00:00.000Z");
const DAY = { algorithm: "fixed-window", windowMs: 86_400_000 } as const;
const iso = (ms: number) => new Date(ms).toISOString();

/** A memory store that counts its calls. */
class CountingStore implements LimiterStore {
  calls = 0;
  readonly #memory: MemoryStore;
  constructor(timers: ManualTimers) {
    this.#memory = new MemoryStore({ clock: timers });
  }
  decide(input: DecideInput): Promise<LayeredDecision> {
    this.calls++;
    return this.#memory.decide(input);
  }
  peek(input: DecideInput): Promise<LayeredDecision> {
    return this.#memory.peek(input);
  }
}

const RULES: TDescriptorRuleInput[] = [
  {
    id: "tenant",
    domain: "d",
    descriptor: [{ key: "tenant" }],
    limit: { ...DAY, limit: 2 },
    raises: [
      {
        id: "acme-launch",
        descriptor: [{ key: "tenant", value: "acme" }],
        factor: 3,
        startsAt: iso(WALL_T0),
        expiresAt: iso(WALL_T0 + 7_200_000),
        owner: "ops",
        reason: "launch",
      },
      {
        id: "initech-later",
        descriptor: [{ key: "tenant", value: "initech" }],
        limit: { ...DAY, limit: 5 },
        startsAt: iso(WALL_T0 + 3_600_000),
        expiresAt: iso(WALL_T0 + 7_200_000),
        owner: "ops",
        reason: "later",
      },
    ],
  },
  { id: "banned", domain: "d", descriptor: [{ key: "user", value: "mallory" }], limit: "deny" },
  {
    id: "banned-shadow",
    domain: "d",
    descriptor: [{ key: "user", value: "eve" }],
    limit: "deny",
    mode: "dry-run",
  },
];

function setup() {
  const timers = new ManualTimers(1_000);
  const wall = new ManualTimers(WALL_T0);
  const store = new CountingStore(timers);
  const snapshot = prepareSnapshot(
    exampleSnapshot((input) => {
      input.descriptorRules = RULES;
    }),
  );
  const engine = new DecisionEngine({
    store,
    snapshot: () => snapshot,
    expectedGateways: 1,
    clock: timers,
    wallClock: wall,
    timers,
    localStage: false,
  });
  const codes = async (key: string, value: string, count: number) => {
    const result: boolean[] = [];
    for (let i = 0; i < count; i++) {
      const [decided] = (await engine.checkDescriptors("d", [[{ key, value }]], 1)) ?? [];
      if (decided?.kind !== "decided") throw new Error(`not decided: ${decided?.kind}`);
      result.push(decided.decision.allowed);
    }
    return result;
  };
  return { engine, store, wall, codes };
}

describe("DecisionEngine.checkDescriptors: raises of one value", () => {
  it("a raise in force gives its value the raised limit, and other values keep the rule's", async () => {
    const { codes } = setup();
    expect(await codes("tenant", "acme", 7)).toEqual([true, true, true, true, true, true, false]);
    expect(await codes("tenant", "hooli", 3)).toEqual([true, true, false]);
  });

  it("a raise not yet started does not apply, and applies from its start", async () => {
    const { codes, wall } = setup();
    expect(await codes("tenant", "initech", 3)).toEqual([true, true, false]);
    wall.advance(3_600_000);
    // The counter carries on: 2 spent, 3 more under the raise's 5.
    expect(await codes("tenant", "initech", 4)).toEqual([true, true, true, false]);
  });

  it("expiry restores the rule's limit on the same counter", async () => {
    const { codes, wall } = setup();
    expect(await codes("tenant", "acme", 4)).toEqual([true, true, true, true]);
    wall.advance(7_199_999);
    expect(await codes("tenant", "acme", 1)).toEqual([true]);
    wall.advance(1);
    expect(await codes("tenant", "acme", 1)).toEqual([false]);
  });
});

describe("DecisionEngine.checkDescriptors: deny", () => {
  it("is answered without a store call, rejected and counted", async () => {
    const { engine, store, codes } = setup();
    expect(await codes("user", "mallory", 3)).toEqual([false, false, false]);
    expect(store.calls).toBe(0);
    const [decided] =
      (await engine.checkDescriptors("d", [[{ key: "user", value: "mallory" }]], 1)) ?? [];
    expect(decided?.kind === "decided" && decided.decision).toMatchObject({
      allowed: false,
      reason: "cost-exceeds-capacity",
      scope: "descriptor:banned",
      source: "rule",
    });
    const figures = engine.metrics.totals();
    expect(figures.decisionsBySource.rule).toBe(4);
    expect(figures.decisionsBySource.store).toBe(0);
  });

  it("in dry-run admits, counts a would-reject, and calls no store", async () => {
    const { engine, store, codes } = setup();
    expect(await codes("user", "eve", 2)).toEqual([true, true]);
    expect(store.calls).toBe(0);
    const scope = engine.metrics
      .totals()
      .scopes.find((counts) => counts.scope === "descriptor:banned-shadow");
    expect(scope).toMatchObject({ wouldReject: 2 });
  });
});
