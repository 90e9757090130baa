import { z } from "zod";
import { parseOptions } from "../change-context";
import type { ReadDeps } from "../deps";
import {
  type CustomerOverrideRecord,
  customerOverrideSelect,
  toCustomerOverrideRecord,
} from "./customer-override-record";

export const ZListAllCustomerOverridesOptions = z.strictObject({
  /** The last scope of the previous page (`nextCursor`). */
  after: z
    .string({ error: "after must be text" })
    .min(1, { error: "after must not be empty" })
    .max(300, { error: "after must be at most 300 characters" })
    .optional(),
  /** @default 50 */
  limit: z
    .number({ error: "limit must be a number" })
    .int({ error: "limit must be a whole number" })
    .min(1, { error: "limit must be at least 1" })
    .max(200, { error: "limit must be at most 200" })
    .default(50),
});
export type ListAllCustomerOverridesOptions = z.input<typeof ZListAllCustomerOverridesOptions>;

export interface CustomerOverridePage {
  readonly overrides: readonly CustomerOverrideRecord[];
  /** Pass as `after` for the next page; null on the last page. */
  readonly nextCursor: string | null;
}

/**
 * Every customer's overrides, a page at a time, ordered by scope (`customer:C`, then
 * `customer:C/endpoint:E`): keyset on the primary key, so a deep page costs what the first does.
 */
export async function listAllCustomerOverrides(
  options: ListAllCustomerOverridesOptions,
  deps: ReadDeps,
): Promise<CustomerOverridePage> {
  const input = parseOptions(ZListAllCustomerOverridesOptions, options);
  const rows = await deps.db.customerOverride.findMany({
    where: input.after === undefined ? undefined : { scope: { gt: input.after } },
    orderBy: { scope: "asc" },
    take: input.limit + 1,
    select: customerOverrideSelect,
  });
  const page = rows.slice(0, input.limit).map(toCustomerOverrideRecord);
  const last = page.at(-1);
  return {
    overrides: page,
    nextCursor: rows.length > input.limit && last !== undefined ? last.scope : null,
  };
}
