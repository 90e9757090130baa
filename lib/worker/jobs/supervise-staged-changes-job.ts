import {
  type SuperviseDeps,
  type SupervisionOutcome,
  superviseStagedChanges,
} from "@/lib/control/staged-change/supervise-staged-changes";
import type { WorkerJob } from "../worker-job";

export interface SuperviseStagedChangesJobOptions {
  readonly deps: SuperviseDeps;
  /**
   * How often live staged changes are looked at: the finest guard window it can honour, so it is
   * the smallest window a staged change may ask for (1 s). @default 1_000
   */
  readonly intervalMs?: number;
  /** Told of every run that did something, for logs and tests. */
  readonly onRun?: (outcomes: readonly SupervisionOutcome[]) => void;
}

/**
 * Steps each live staged change's guard and clock (`superviseStagedChanges`): reverts a change
 * whose slice rejects more than the rest, advances and completes steps whose dwell time passed,
 * and tells the operator of a step holding for traffic.
 */
export function superviseStagedChangesJob(options: SuperviseStagedChangesJobOptions): WorkerJob {
  const intervalMs = options.intervalMs ?? 1_000;
  return {
    name: "staged changes",
    async run() {
      const outcomes = await superviseStagedChanges(options.deps);
      if (outcomes.some((outcome) => outcome.action !== "wait" && outcome.action !== "held")) {
        options.onRun?.(outcomes);
      }
      return { nextRunInMs: intervalMs };
    },
  };
}
