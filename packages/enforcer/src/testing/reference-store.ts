import type { Clock } from "../limiter/clock";
import { bucketOf, decideLayered, peekLayered } from "../limiter/layered";
import type { LimitState } from "../limiter/step-limit";
import type { DecideInput, LayeredDecision, LimiterStore } from "../limiter/types";

/**
 * The simplest store that can be right: states in a plain `Map`, unbounded, every decision made
 * by the pure layered combiner. The contract suite runs against it to show the suite itself is
 * sound, and every real store must behave the same.
 */
export class ReferenceStore implements LimiterStore {
  readonly #states = new Map<string, LimitState>();
  readonly #clock: Clock;

  constructor(clock: Clock) {
    this.#clock = clock;
  }

  async decide(input: DecideInput): Promise<LayeredDecision> {
    const keys = input.checks.map((check) => JSON.stringify([input.subject, bucketOf(check)]));
    const result = decideLayered(
      keys.map((key) => this.#states.get(key)),
      input.checks,
      this.#clock.nowMs(),
      input.cost ?? 1,
    );
    keys.forEach((key, i) => {
      const state = result.states[i];
      if (state !== undefined) this.#states.set(key, state);
    });
    return result.decision;
  }

  async peek(input: DecideInput): Promise<LayeredDecision> {
    return peekLayered(
      input.checks.map((check) =>
        this.#states.get(JSON.stringify([input.subject, bucketOf(check)])),
      ),
      input.checks,
      this.#clock.nowMs(),
      input.cost ?? 1,
    );
  }
}
