/**
 * Outbound budgets: limits on calls WE make (to a provider, a website, a notification channel),
 * named by scopes `outbound:<name>`. A caller waits for its turn instead of being rejected
 * (`createOutboundLimiter` in the enforcer); the limit uses any algorithm of the core.
 */
import { z } from "zod";
import type { LimitSpec } from "../../limiter/types";
import type { PolicyFieldError } from "../errors";
import {
  checkCountGuardrail,
  checkIncidentGuardrails,
  type GuardrailSettings,
} from "../guardrails";
import { CUSTOMER_ID_PATTERN } from "../names";
import { countField, endpointClassName, strict, textField, ZInstant } from "../schema-fields";
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

/** The most calls in flight a concurrency cap (or a raise of one) allows. */
const MAX_CONCURRENCY = 1_000_000;

/** A concurrency cap: at most `max` calls in flight, each slot held with a renewed TTL. */
export const ZOutboundConcurrency = strict({
  /** Most calls in flight at once per key, across every process. */
  max: countField("concurrency.max", MAX_CONCURRENCY),
  /**
   * How long a slot lives without renewal. The holder renews it every third of this while it
   * works, so a holder that dies (kill -9, a crash, a lost network) frees its slot at most this
   * long after its last renewal.
   * @default 10000
   */
  slotTtlMs: countField("concurrency.slotTtlMs", MAX_OUTBOUND_WAIT_MS, 300).default(10_000),
});
export type TOutboundConcurrency = z.output<typeof ZOutboundConcurrency>;

function outboundRaiseShape() {
  return {
    /**
     * The rate limit in force during the raise, replacing the budget's `limit` (any algorithm).
     * Null: the budget's own limit stays.
     */
    limit: ZLimitSpec.nullable(),
    /** The concurrency cap's `max` during the raise; null: the budget's own stays. */
    concurrencyMax: countField("concurrencyMax", MAX_CONCURRENCY).nullable(),
    startsAt: ZInstant,
    /** Required: every raise ends by itself, by the wall clock of each enforcer. */
    expiresAt: ZInstant,
  };
}

function refineOutboundRaise(
  raise: {
    readonly limit: unknown;
    readonly concurrencyMax: unknown;
    readonly startsAt: string;
    readonly expiresAt: string;
  },
  ctx: z.RefinementCtx,
): void {
  if (raise.limit === null && raise.concurrencyMax === null) {
    ctx.addIssue({
      code: "custom",
      path: ["limit"],
      message: "a raise needs a limit, a concurrencyMax, or both",
    });
  }
  if (!(Date.parse(raise.expiresAt) > Date.parse(raise.startsAt))) {
    ctx.addIssue({
      code: "custom",
      path: ["expiresAt"],
      message: "expiresAt must be after startsAt",
    });
  }
}

/**
 * A raise (or cut) of a budget for a while, as an incident override is for a customer: "the
 * provider raised our quota for the day". It applies while `startsAt <= now < expiresAt` (wall
 * clock) on the budget's own counters and slots, so the count carries on when it starts and when
 * it ends. Bounded by the policy's guardrails like an incident ({@link checkOutboundRaise}).
 */
export const ZOutboundRaise = strict({
  ...outboundRaiseShape(),
  limit: ZLimitSpec.nullable().default(null),
  concurrencyMax: countField("concurrencyMax", MAX_CONCURRENCY).nullable().default(null),
  /** Who raised it. */
  owner: textField("owner", 200),
  reason: textField("reason", 1000),
}).superRefine(refineOutboundRaise);
export type TOutboundRaise = z.output<typeof ZOutboundRaise>;

/** A raise as compiled: no owner or reason (enforcers need neither). */
export const ZSnapshotOutboundRaise = strict(outboundRaiseShape()).superRefine(refineOutboundRaise);
export type TSnapshotOutboundRaise = z.output<typeof ZSnapshotOutboundRaise>;

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
  /**
   * A raise for a while (see {@link ZOutboundRaise}); past ones stay until the control plane
   * records their expiry. @default null (none)
   */
  raise: ZOutboundRaise.nullable().default(null),
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
  /** Absent when there is none, so a budget without a raise compiles as it did before raises. */
  raise: ZSnapshotOutboundRaise.optional(),
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
    ...(budget.raise === null
      ? {}
      : {
          raise: {
            limit: budget.raise.limit,
            concurrencyMax: budget.raise.concurrencyMax,
            startsAt: budget.raise.startsAt,
            expiresAt: budget.raise.expiresAt,
          },
        }),
  };
}

/** What {@link outboundBudgetAt} and {@link checkOutboundRaise} read of a budget. */
interface RaisableBudget {
  readonly limit: LimitSpec | null;
  readonly concurrency: TOutboundConcurrency | null;
  readonly raise?: TSnapshotOutboundRaise | null;
}

/** True while `raise` applies: from its `startsAt` until (not at) its `expiresAt`. */
export function isOutboundRaiseActive(
  raise: { readonly startsAt: string; readonly expiresAt: string },
  nowMs: number,
): boolean {
  return Date.parse(raise.startsAt) <= nowMs && nowMs < Date.parse(raise.expiresAt);
}

/**
 * The budget in force at `nowMs` (wall clock): its raise's limit and concurrency cap while the
 * raise applies, its own before and after. Pure, so every enforcer reads a raise's expiry the same
 * way and none needs a new version to stop applying it.
 */
export function outboundBudgetAt<Budget extends RaisableBudget>(
  budget: Budget,
  nowMs: number,
): Budget {
  const raise = budget.raise;
  if (raise === undefined || raise === null || !isOutboundRaiseActive(raise, nowMs)) return budget;
  return {
    ...budget,
    limit: raise.limit ?? budget.limit,
    concurrency:
      budget.concurrency === null || raise.concurrencyMax === null
        ? budget.concurrency
        : { ...budget.concurrency, max: raise.concurrencyMax },
  };
}

/**
 * Every problem a raise of `budget` has, each naming the raise's field (`limit.capacity`,
 * `concurrencyMax`, `expiresAt`): a number for something the budget does not have, and the
 * incident guardrails (the limit and the cap within `maxIncidentFactor` of the budget's own, the
 * duration within `maxIncidentDurationMs`; with `nowMs`, an expiry already past). Empty: it passes.
 */
export function checkOutboundRaise(
  raise: TSnapshotOutboundRaise,
  budget: RaisableBudget,
  options: { readonly guardrails: GuardrailSettings; readonly nowMs?: number },
): PolicyFieldError[] {
  const errors: PolicyFieldError[] = [];
  if (raise.limit !== null && budget.limit === null) {
    errors.push({
      path: ["limit"],
      message: "this budget has no rate limit to raise; raise its concurrencyMax instead",
    });
  }
  if (raise.concurrencyMax !== null && budget.concurrency === null) {
    errors.push({
      path: ["concurrencyMax"],
      message: "this budget has no concurrency cap to raise; raise its limit instead",
    });
  }
  errors.push(
    ...checkIncidentGuardrails(
      {
        factor: null,
        limit: raise.limit,
        startsAt: raise.startsAt,
        expiresAt: raise.expiresAt,
      },
      { guardrails: options.guardrails, replacedLimit: budget.limit, nowMs: options.nowMs },
    ),
  );
  if (raise.concurrencyMax !== null && budget.concurrency !== null) {
    const problem = checkCountGuardrail(
      "concurrencyMax",
      raise.concurrencyMax,
      budget.concurrency.max,
      options.guardrails,
    );
    if (problem !== null) errors.push(problem);
  }
  return errors;
}

/**
 * Budget names are unique in a policy; with `guardrails` (a document's), every raise keeps within
 * them ({@link checkOutboundRaise}, without the clock: a past raise is history).
 */
export function checkOutboundBudgets(
  budgets: readonly ({ readonly name: string } & RaisableBudget)[],
  add: AddIssue,
  guardrails?: GuardrailSettings,
): void {
  if (guardrails !== undefined) {
    budgets.forEach((budget, index) => {
      if (budget.raise === undefined || budget.raise === null) return;
      for (const error of checkOutboundRaise(budget.raise, budget, { guardrails })) {
        add(["outboundBudgets", index, "raise", ...error.path], error.message);
      }
    });
  }
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
