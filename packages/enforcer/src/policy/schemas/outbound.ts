/**
 * Outbound budgets: limits on calls WE make (to a provider, a website, a notification channel),
 * named by scopes `outbound:<name>`. A caller waits for its turn instead of being rejected
 * (`createOutboundLimiter` in the enforcer); the limit uses any algorithm of the core.
 */
import { z } from "zod";
import { CUSTOMER_ID_PATTERN } from "../names";
import { countField, endpointClassName, strict, textField } from "../schema-fields";
import { ZLimitSpec } from "./limits";
import { type AddIssue, indexUnique } from "./rules";

/** The longest a caller may be told to wait, and the longest slot TTL: one hour. */
export const MAX_OUTBOUND_WAIT_MS = 3_600_000;

/** The longest key a caller may pass, in UTF-16 code units. */
export const MAX_OUTBOUND_KEY_LENGTH = 255;

/**
 * What the caller's key names, so a typo or a wrong value is refused instead of silently making
 * a new budget: `single` (one budget for the whole scope; the key is empty), `host` (one per host
 * name, lower case, optional `:port`: a crawler's per-site budget), `account` (one per provider
 * account or channel id: 1 to 128 of A-Z, a-z, 0-9, `.`, `_`, `:`, `@`, `-`).
 */
export const ZOutboundKeyBy = z.enum(["single", "host", "account"], {
  error: "keyBy must be one of: single, host, account",
});
export type TOutboundKeyBy = z.output<typeof ZOutboundKeyBy>;

/** A concurrency cap: at most `max` calls in flight, each slot held with a renewed TTL. */
export const ZOutboundConcurrency = strict({
  /** Most calls in flight at once per key, across every process. */
  max: countField("concurrency.max", 1_000_000),
  /**
   * How long a slot lives without renewal. The holder renews it every third of this while it
   * works, so a holder that dies (kill -9, a crash, a lost network) frees its slot at most this
   * long after its last renewal.
   * @default 10000
   */
  slotTtlMs: countField("concurrency.slotTtlMs", MAX_OUTBOUND_WAIT_MS, 300).default(10_000),
});
export type TOutboundConcurrency = z.output<typeof ZOutboundConcurrency>;

/** At most this many outbound budgets in a policy. */
export const MAX_OUTBOUND_BUDGETS = 500;

function requireLimitOrConcurrency(
  budget: { readonly limit: unknown; readonly concurrency: unknown },
  ctx: z.RefinementCtx,
): void {
  if (budget.limit === null && budget.concurrency === null) {
    ctx.addIssue({
      code: "custom",
      path: ["limit"],
      message: "a budget needs a limit, a concurrency cap, or both",
    });
  }
}

export const ZOutboundBudget = strict({
  /** Stable name: the scope is `outbound:<name>`. */
  name: endpointClassName("outbound budget name"),
  displayName: textField("displayName", 80).nullable().default(null),
  /**
   * The rate: any algorithm (a provider's "10 per second" is a token bucket of capacity 1), or
   * null for a budget that only caps concurrency (an inbound cap, checked by the concurrency
   * middlewares).
   */
  limit: ZLimitSpec.nullable(),
  /** An optional cap on calls in flight. @default null (none) */
  concurrency: ZOutboundConcurrency.nullable().default(null),
  /**
   * The longest a caller waits for its turn (and a slot) unless it asks for less.
   * @default 30000
   */
  maxWaitMs: countField("maxWaitMs", MAX_OUTBOUND_WAIT_MS, 0).default(30_000),
  /** @default "single" */
  keyBy: ZOutboundKeyBy.default("single"),
}).superRefine(requireLimitOrConcurrency);
export type TOutboundBudget = z.output<typeof ZOutboundBudget>;
export type TOutboundBudgetInput = z.input<typeof ZOutboundBudget>;

/**
 * A budget as enforcers hold it (entry `outbound:<name>`): no display name, every default
 * explicit.
 */
export const ZSnapshotOutboundBudget = strict({
  name: endpointClassName("outbound budget name"),
  limit: ZLimitSpec.nullable(),
  concurrency: ZOutboundConcurrency.nullable(),
  maxWaitMs: countField("maxWaitMs", MAX_OUTBOUND_WAIT_MS, 0),
  keyBy: ZOutboundKeyBy,
}).superRefine(requireLimitOrConcurrency);
export type TSnapshotOutboundBudget = z.output<typeof ZSnapshotOutboundBudget>;

/** The compiled form of a budget (what `compileEntries` publishes). */
export function snapshotOutboundBudget(budget: TOutboundBudget): TSnapshotOutboundBudget {
  return {
    name: budget.name,
    limit: budget.limit,
    concurrency: budget.concurrency,
    maxWaitMs: budget.maxWaitMs,
    keyBy: budget.keyBy,
  };
}

/** Budget names are unique in a policy. */
export function checkOutboundBudgets(
  budgets: readonly { readonly name: string }[],
  add: AddIssue,
): void {
  indexUnique(
    budgets,
    (budget) => budget.name,
    (index, first, name) =>
      add(
        ["outboundBudgets", index, "name"],
        `outbound budget "${name}" is already defined at outboundBudgets[${first}]`,
      ),
  );
}

const HOST_PATTERN =
  /^(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*|\[[0-9a-f:.]{2,45}\])(?::[0-9]{1,5})?$/;

/**
 * Why `key` is not a valid key for a budget keyed by `keyBy`, or null when it is. The message names
 * the field and the problem; a long key is described by its length, never echoed.
 */
export function outboundKeyProblem(keyBy: TOutboundKeyBy, key: unknown): string | null {
  if (typeof key !== "string") return `key must be text, not ${typeof key}`;
  if (key.length > MAX_OUTBOUND_KEY_LENGTH) {
    return `key must be at most ${MAX_OUTBOUND_KEY_LENGTH} characters, got ${key.length}`;
  }
  switch (keyBy) {
    case "single":
      return key === ""
        ? null
        : "key must be empty: this budget is keyed by nothing (keyBy single)";
    case "host":
      return HOST_PATTERN.test(key)
        ? null
        : `key must be a lower-case host name or [IPv6 address], with an optional :port (keyBy host), not ${JSON.stringify(key.slice(0, 40))}`;
    case "account":
      return CUSTOMER_ID_PATTERN.test(key)
        ? null
        : `key must be 1 to 128 characters of A-Z, a-z, 0-9, ".", "_", ":", "@" and "-" (keyBy account), not ${JSON.stringify(key.slice(0, 40))}`;
  }
}
