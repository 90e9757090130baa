import {
  GlobalBudgetReconciler,
  type GlobalBudgetSettings,
  type ReconcileGlobalBudgetsDeps,
  type ReconcileRound,
} from "@/lib/control/region/reconcile-global-budgets";
import type { WorkerJob } from "../worker-job";

export interface ReconcileGlobalBudgetsJobOptions {
  readonly deps: Omit<ReconcileGlobalBudgetsDeps, "sleep">;
  readonly settings: Omit<GlobalBudgetSettings, "timeoutMs">;
  /** Told of every round, for logs and tests. */
  readonly onRound?: (round: ReconcileRound) => void;
}

/** Waits `ms`, or less when `signal` aborts. */
function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    signal?.addEventListener("abort", done, { once: true });
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    }
  });
}

/**
 * Divides every global limit among the regions by their demand, every GLOBAL_BUDGET_INTERVAL_MS
 * (docs/regions.md, "Global budgets"). A round that throws (Postgres down) is retried after one
 * interval; the regions' leases then run out by themselves, onto their floors.
 */
export function reconcileGlobalBudgetsJob(options: ReconcileGlobalBudgetsJobOptions): WorkerJob {
  const { intervalMs } = options.settings;
  const reconciler = new GlobalBudgetReconciler(
    { ...options.deps, sleep },
    // A region that takes half the interval to answer is unreachable this round.
    { ...options.settings, timeoutMs: Math.max(50, Math.floor(intervalMs / 2)) },
  );
  return {
    name: "reconcile global budgets",
    errorRetryMs: intervalMs,
    async run(signal) {
      const startedAtMs = options.deps.clock.nowMs();
      const round = await reconciler.run(signal);
      options.onRound?.(round);
      const tookMs = options.deps.clock.nowMs() - startedAtMs;
      return { nextRunInMs: Math.max(0, intervalMs - tookMs) };
    },
  };
}
