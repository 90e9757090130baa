import { ZCustomerId } from "@limitplane/enforcer/policy";
import { z } from "zod";

/** The longest span the tally answers for: the enforcers keep it 6 hours (`minuteBucketTtlMs`). */
export const MAX_REJECTION_SPAN_MINUTES = 360;

export const ZListRejectedCustomersOptions = z.strictObject({
  /**
   * The span, in whole minutes ending with the current one (still counting).
   * @default 60
   */
  minutes: z
    .number({ error: "minutes must be a number" })
    .int({ error: "minutes must be a whole number" })
    .min(1, { error: "minutes must be at least 1" })
    .max(MAX_REJECTION_SPAN_MINUTES, {
      error: `minutes must be at most ${MAX_REJECTION_SPAN_MINUTES} (the gateways keep 6 hours)`,
    })
    .default(60),
  /**
   * Most customers listed, the most rejected first.
   * @default 10
   */
  limit: z
    .number({ error: "limit must be a number" })
    .int({ error: "limit must be a whole number" })
    .min(1, { error: "limit must be at least 1" })
    .max(200, { error: "limit must be at most 200" })
    .default(10),
  /** Only these customers (a page of the registry, say), whatever their rank. */
  customerIds: z
    .array(ZCustomerId, { error: "customerIds must be a list of customer ids" })
    .max(200, { error: "customerIds must list at most 200 customers" })
    .optional(),
});
export type ListRejectedCustomersOptions = z.input<typeof ZListRejectedCustomersOptions>;
