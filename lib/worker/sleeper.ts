/**
 * A wait that ends at its deadline, when woken, or when aborted, whichever comes first. Jobs use
 * it between runs so a notification (a new outbox row, Redis reconnecting) runs them at once.
 */
export class Sleeper {
  #wake: (() => void) | null = null;
  #wokenEarly = false;

  /** Resolves after `ms`, on `wake()`, or on abort. A wake before the sleep is kept for it. */
  sleep(ms: number, signal: AbortSignal): Promise<void> {
    if (this.#wokenEarly || signal.aborted) {
      this.#wokenEarly = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener("abort", done);
        this.#wake = null;
        resolve();
      };
      const timer = setTimeout(done, Math.max(0, ms));
      signal.addEventListener("abort", done, { once: true });
      this.#wake = done;
    });
  }

  wake(): void {
    if (this.#wake === null) this.#wokenEarly = true;
    else this.#wake();
  }
}
