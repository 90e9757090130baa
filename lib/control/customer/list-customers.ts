import { hasForbiddenCharacter, ZCustomer } from "@limitplane/enforcer/policy";
import { z } from "zod";
import type { Prisma } from "@/lib/generated/prisma/client";
import { parseOptions } from "../change-context";
import type { ReadDeps } from "../deps";
import { type CustomerRecord, customerSelect, toCustomerRecord } from "./customer-record";

export const ZListCustomersOptions = z.strictObject({
  /**
   * Matches customers whose id starts with it or whose display name contains it, ignoring case.
   * Both are served by trigram indexes, so a million customers stay fast.
   */
  search: z
    .string({ error: "search must be text" })
    .trim()
    .min(1, { error: "search must not be empty" })
    .max(200, { error: "search must be at most 200 characters" })
    .refine((value) => !hasForbiddenCharacter(value), {
      error: "search must not contain control or bidirectional formatting characters",
    })
    .optional(),
  tier: ZCustomer.shape.tier.optional(),
  /** The last id of the previous page (`nextCursor`). */
  after: ZCustomer.shape.id.optional(),
  /** @default 50 */
  limit: z
    .number({ error: "limit must be a number" })
    .int({ error: "limit must be a whole number" })
    .min(1, { error: "limit must be at least 1" })
    .max(200, { error: "limit must be at most 200" })
    .default(50),
});
export type ListCustomersOptions = z.input<typeof ZListCustomersOptions>;

export interface CustomerPage {
  readonly customers: readonly CustomerRecord[];
  /** Pass as `after` for the next page; null on the last page. */
  readonly nextCursor: string | null;
}

/** `%`, `_` and `\` taken literally in a LIKE pattern. */
function escapeLike(text: string): string {
  return text.replace(/[\\%_]/g, (character) => `\\${character}`);
}

/** Customers by id, a page at a time (keyset on id, so deep pages cost what the first does). */
export async function listCustomers(
  options: ListCustomersOptions,
  deps: ReadDeps,
): Promise<CustomerPage> {
  const input = parseOptions(ZListCustomersOptions, options);
  const where: Prisma.CustomerWhereInput = {
    tier: input.tier,
    id: input.after === undefined ? undefined : { gt: input.after },
  };
  if (input.search !== undefined) {
    const pattern = escapeLike(input.search);
    where.OR = [
      { id: { startsWith: pattern, mode: "insensitive" } },
      { displayName: { contains: pattern, mode: "insensitive" } },
    ];
  }
  const rows = await deps.db.customer.findMany({
    where,
    orderBy: { id: "asc" },
    take: input.limit + 1,
    select: customerSelect,
  });
  const page = rows.slice(0, input.limit).map(toCustomerRecord);
  const last = page.at(-1);
  return {
    customers: page,
    nextCursor: rows.length > input.limit && last !== undefined ? last.id : null,
  };
}
