import { hasForbiddenCharacter, ZCustomerId } from "@limitplane/enforcer/policy";
import { z } from "zod";

export const ZSeenCustomerId = ZCustomerId;

export const ZListSeenCustomersOptions = z.strictObject({
  /** Matches customers whose id starts with it, ignoring case (as the registry's search does). */
  search: z
    .string({ error: "search must be text" })
    .trim()
    .min(1, { error: "search must not be empty" })
    .max(200, { error: "search must be at most 200 characters" })
    .refine((value) => !hasForbiddenCharacter(value), {
      error: "search must not contain control or bidirectional formatting characters",
    })
    .optional(),
  /** @default 25 */
  limit: z
    .number({ error: "limit must be a number" })
    .int({ error: "limit must be a whole number" })
    .min(1, { error: "limit must be at least 1" })
    .max(200, { error: "limit must be at most 200" })
    .default(25),
});
export type ListSeenCustomersOptions = z.input<typeof ZListSeenCustomersOptions>;
