/**
 * Whether Redis refused an EVALSHA because it does not hold the script (`NOSCRIPT`: a restarted
 * Redis or `SCRIPT FLUSH` empties the cache). Every caller then runs EVAL, which caches it again.
 * The one test for it: the limiter's store and the publication scripts use this.
 */
export function isNoScript(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith("NOSCRIPT");
}
