/** What the worker runs. Later issues add jobs (metric roll-ups, alert webhooks) the same way. */
export interface WorkerJob {
  /** Shown in logs. */
  readonly name: string;
  /**
   * One run. Returns how long to wait before the next (0: at once, e.g. more work is pending).
   * Throwing is logged, and the run is retried after `errorRetryMs` (default 5 s).
   */
  run(signal: AbortSignal): Promise<{ readonly nextRunInMs: number }>;
  /** Postgres NOTIFY channels whose notifications run the job at once. */
  readonly wakeOn?: readonly string[];
  /**
   * Called when the worker starts leading, with a function that runs the job at once; returns a
   * function called when it stops leading. For wake-ups that are not Postgres notifications,
   * e.g. Redis reconnecting.
   */
  attach?(wake: () => void): () => void;
  /** @default 5000 */
  readonly errorRetryMs?: number;
}
