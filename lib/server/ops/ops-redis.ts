/**
 * What the customer page reads of the enforcers' reports in Redis: each customer's recent
 * rejections (`rejections:<customerId>`, named by the package's publication protocol), on the
 * console's one read connection (`consoleRedis`).
 */
import "server-only";
import type { Redis } from "ioredis";

/** What the readers need: a client and the installation's key prefix (the composition root builds the process-wide one; tests pass their own). */
export interface OpsRedisDeps {
  readonly redis: Pick<Redis, "lrange">;
  readonly prefix: string;
}
