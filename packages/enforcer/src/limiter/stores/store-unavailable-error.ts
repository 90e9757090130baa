/**
 * A store could not answer: the connection is down or was lost mid-command, the command timed
 * out, or the server refused to work right now (loading, busy, read-only replica after a
 * failover, out of memory). No decision was made and nothing is known about whether the request
 * would fit. The enforcer runtime catches exactly this class and applies its declared failure
 * policy (open, closed, or a bounded local quota); every other error is a bug and propagates.
 */
export class StoreUnavailableError extends Error {
  override name = "StoreUnavailableError";

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}
