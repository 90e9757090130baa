/** Limits: the five algorithms' specs, modes, failure policies and the policy limits built on them. */
import { z } from "zod";
import { LIMIT_BOUNDS } from "../../limiter/arguments";
import type { Algorithm, LimitSpec } from "../../limiter/types";
import { MAX_LIMIT_COUNT, MAX_RATE_PER_SEC, MAX_WINDOW_MS, MIN_RATE_PER_SEC } from "../limit-math";
import { countField, rateField, strict } from "../schema-fields";

// ---------------------------------------------------------------------------------------------
// Limits

export const ALGORITHMS = [
  "fixed-window",
  "sliding-log",
  "sliding-window",
  "token-bucket",
  "leaky-meter",
] as const satisfies readonly Algorithm[];

export const windowMsField = countField("windowMs", MAX_WINDOW_MS);

export const LIMIT_SHAPES = {
  "fixed-window": {
    algorithm: z.literal("fixed-window"),
    limit: countField("limit", MAX_LIMIT_COUNT),
    windowMs: windowMsField,
  },
  "sliding-log": {
    algorithm: z.literal("sliding-log"),
    limit: countField("limit", MAX_LIMIT_COUNT),
    windowMs: windowMsField,
  },
  "sliding-window": {
    algorithm: z.literal("sliding-window"),
    limit: countField("limit", MAX_LIMIT_COUNT),
    windowMs: windowMsField,
  },
  "token-bucket": {
    algorithm: z.literal("token-bucket"),
    capacity: countField("capacity", MAX_LIMIT_COUNT),
    refillPerSec: rateField("refillPerSec"),
  },
  "leaky-meter": {
    algorithm: z.literal("leaky-meter"),
    burst: countField("burst", MAX_LIMIT_COUNT),
    drainPerSec: rateField("drainPerSec"),
  },
} as const;

/**
 * A rate limit must come back within the limiter's longest duration (`LIMIT_BOUNDS.maxDurationMs`,
 * about 31.7 years): refilling or draining the whole size at the rate may not take longer. A
 * burst of a billion at one unit per 11 days would take 31,700 years, which no store can wait
 * for in whole milliseconds.
 */
export function refillsInTime<T extends z.ZodType>(
  schema: T,
  sizeField: "capacity" | "burst",
  rateField: "refillPerSec" | "drainPerSec",
): T {
  return schema.superRefine((value, ctx) => {
    const fields = value as Record<string, unknown>;
    const size = fields[sizeField];
    const rate = fields[rateField];
    // Only once both fields are valid on their own: a field out of range says so by itself.
    if (typeof size !== "number" || !(size >= 1 && size <= MAX_LIMIT_COUNT)) return;
    if (typeof rate !== "number" || !(rate >= MIN_RATE_PER_SEC && rate <= MAX_RATE_PER_SEC)) {
      return;
    }
    const fullMs = (size * 1000) / rate;
    if (fullMs > LIMIT_BOUNDS.maxDurationMs) {
      const years = Math.round(fullMs / 31_557_600_000);
      ctx.addIssue({
        code: "custom",
        path: [rateField],
        message: `${rateField} ${rate} takes ${years.toLocaleString("en-US")} years to ${
          sizeField === "capacity" ? "refill" : "drain"
        } ${sizeField} ${size}; a limit must come back within about 31.7 years: raise ${rateField} or lower ${sizeField}`,
      });
    }
  }) as unknown as T;
}

export const algorithmError = {
  error: (issue: { code?: string }) =>
    issue.code === "invalid_union"
      ? `algorithm must be one of: ${ALGORITHMS.join(", ")}`
      : "expected a limit object with an algorithm field",
};

/**
 * A limit as the limiter core takes it (`packages/enforcer/src/limiter/types.ts`), discriminated on `algorithm`:
 * fixed-window, sliding-log and sliding-window take `{ limit, windowMs }`; token-bucket
 * `{ capacity, refillPerSec }`; leaky-meter `{ burst, drainPerSec }`. Counts are whole numbers from
 * 1 to 1e9, windows 1 ms to 365 days, rates (fractional allowed) from 0.000001 to 1e9 per second.
 * Customer-facing limits use token-bucket: its two numbers are the burst a customer can send at
 * once and the rate they can sustain.
 */
export const ZLimitSpec = z.discriminatedUnion(
  "algorithm",
  [
    strict(LIMIT_SHAPES["fixed-window"]),
    strict(LIMIT_SHAPES["sliding-log"]),
    strict(LIMIT_SHAPES["sliding-window"]),
    refillsInTime(strict(LIMIT_SHAPES["token-bucket"]), "capacity", "refillPerSec"),
    refillsInTime(strict(LIMIT_SHAPES["leaky-meter"]), "burst", "drainPerSec"),
  ],
  algorithmError,
);
export type TLimitSpec = z.output<typeof ZLimitSpec>;

/**
 * How a limit takes part in decisions.
 * - `enforce`: evaluated; a rejection rejects the request.
 * - `dry-run`: evaluated on its own bucket next to what is enforced and counted as would-reject;
 *   never rejects, never replaces the limit below it.
 * - `off`: disabled, as if absent: the layer falls back to the next less specific rule. Turning an
 *   override off never leaves a customer without the limit it was overriding.
 */
export const ZPolicyMode = z.enum(["enforce", "dry-run", "off"], {
  error: "mode must be one of: enforce, dry-run, off",
});
export type TPolicyMode = z.output<typeof ZPolicyMode>;

/**
 * What an enforcer does with this limit when its store (Redis) is slow or unreachable, after its
 * timeout: `open` admits, `closed` rejects, `local` enforces a bounded in-process quota (the limit
 * shared among the expected number of gateways). Defaults per layer: see {@link ON_STORE_FAILURE_DEFAULTS}.
 */
export const ZOnStoreFailure = z.enum(["open", "closed", "local"], {
  error: "onStoreFailure must be one of: open, closed, local",
});
export type TOnStoreFailure = z.output<typeof ZOnStoreFailure>;

/**
 * How sure a limit's admissions are to survive a Redis failover (`LimitCheck.durability`):
 * `async` (the default, stated by leaving the field out) writes to the primary, which replicates
 * afterwards, so a failover can lose the last admissions (docs/failover.md bounds how many);
 * `replicated` waits for a replica to acknowledge each decision's writes before admitting, and
 * lets the failure policy decide when none does in time.
 */
export const ZDurability = z.enum(["async", "replicated"], {
  error: "durability must be one of: async, replicated",
});
export type TDurability = z.output<typeof ZDurability>;

/**
 * The failure policy a limit gets when it does not state one, by where it sits:
 *
 * - Customer limits (tier limits, per-endpoint tier limits, customer overrides): `open`. The caller
 *   is authenticated and paying; our store being down is our outage, not a reason to reject them.
 *   The ceilings still bound each gateway meanwhile.
 * - Ceilings (`ceiling`, `ceiling/endpoint:E`) and the per-address ceiling (`address`): `local`.
 *   They protect the service, which needs protecting most during an incident; a local quota keeps
 *   a bound without turning the limiter into the outage (as `closed` would for every anonymous
 *   visitor).
 * - Anonymous endpoint limits (`address/endpoint:E`, e.g. sign-in): `closed`. They stop guessing
 *   and abuse from one place; a few seconds of refused sign-ins is cheaper than unbounded guesses,
 *   and a local quota multiplies with the number of gateways an attacker can reach.
 *
 * Incident overrides keep the failure policy of the limit they replace. Dry-run checks are always
 * `open`: they never reject.
 */
export const ON_STORE_FAILURE_DEFAULTS = {
  customer: "open",
  ceiling: "local",
  address: "local",
  anonymousEndpoint: "closed",
} as const satisfies Record<string, TOnStoreFailure>;

/**
 * `true`: the limit is one budget divided among the regions (docs/regions.md, "Global budgets"):
 * each region's enforcers apply the share of its capacity and refill the reconciler gives their
 * region. Left out: every region enforces the whole limit. Token-bucket limits only: a lowered
 * capacity clamps a bucket's balance, so a share moved between regions is never spent twice,
 * which a window's count or a meter's level would allow.
 */
export const ZGlobal = z.literal(true, {
  error: "global must be true, or left out for a limit each region enforces in full",
});

/** The message for `global` on a limit that cannot be divided among regions. */
export const GLOBAL_ONLY_ON =
  "global applies only to tier limits and ceilings (an override, an anonymous or per-address limit is enforced per region)";

/**
 * Refuses `global` on an algorithm other than token-bucket, and anywhere when `isGlobalAllowed` is
 * false, naming the field.
 */
function globalOnlyOnTokenBucket<T extends z.ZodType>(schema: T, isGlobalAllowed = true): T {
  return schema.superRefine((value, ctx) => {
    const fields = value as Record<string, unknown>;
    if (fields.global === true && !isGlobalAllowed) {
      ctx.addIssue({ code: "custom", path: ["global"], message: GLOBAL_ONLY_ON });
    } else if (fields.global === true && fields.algorithm !== "token-bucket") {
      ctx.addIssue({
        code: "custom",
        path: ["global"],
        message: `global applies only to token-bucket limits, not ${String(fields.algorithm)}: a share of a window's count or a meter's level could be spent in two regions`,
      });
    }
  }) as unknown as T;
}

/** The limit union with `extra` fields (mode, failure policy) added to every algorithm. */
export function policyLimitUnion<Extra extends z.ZodRawShape>(extra: Extra) {
  return z.discriminatedUnion(
    "algorithm",
    [
      strict({ ...LIMIT_SHAPES["fixed-window"], ...extra }),
      strict({ ...LIMIT_SHAPES["sliding-log"], ...extra }),
      strict({ ...LIMIT_SHAPES["sliding-window"], ...extra }),
      refillsInTime(
        strict({ ...LIMIT_SHAPES["token-bucket"], ...extra }),
        "capacity",
        "refillPerSec",
      ),
      refillsInTime(strict({ ...LIMIT_SHAPES["leaky-meter"], ...extra }), "burst", "drainPerSec"),
    ],
    algorithmError,
  );
}

/**
 * A policy limit whose `mode` defaults to enforce and `onStoreFailure` to `defaultOnStoreFailure`.
 * `isGlobalAllowed`: whether it may be marked `global` (tier limits and ceilings).
 */
export function policyLimitSchema(defaultOnStoreFailure: TOnStoreFailure, isGlobalAllowed = true) {
  return globalOnlyOnTokenBucket(
    policyLimitUnion({
      mode: ZPolicyMode.default("enforce"),
      onStoreFailure: ZOnStoreFailure.default(defaultOnStoreFailure),
      durability: ZDurability.optional(),
      global: ZGlobal.optional(),
    }),
    isGlobalAllowed,
  );
}

/**
 * A limit as a policy holds it: a {@link ZLimitSpec} plus `mode` (default `enforce`) and
 * `onStoreFailure` (default `open` here; ceilings and anonymous limits default differently, see
 * {@link ON_STORE_FAILURE_DEFAULTS}).
 */
export const ZPolicyLimit = policyLimitSchema(ON_STORE_FAILURE_DEFAULTS.customer);
export type TPolicyLimit = z.output<typeof ZPolicyLimit>;

/** A customer override's limit: {@link ZPolicyLimit} that cannot be `global`. */
export const ZOverrideLimit = policyLimitSchema(ON_STORE_FAILURE_DEFAULTS.customer, false);

export const ZCeilingLimit = policyLimitSchema(ON_STORE_FAILURE_DEFAULTS.ceiling);
export const ZAddressLimit = policyLimitSchema(ON_STORE_FAILURE_DEFAULTS.address, false);
export const ZAnonymousEndpointLimit = policyLimitSchema(
  ON_STORE_FAILURE_DEFAULTS.anonymousEndpoint,
  false,
);
/** Compiled output states both fields: snapshots use this. */
export const ZExplicitPolicyLimit = globalOnlyOnTokenBucket(
  policyLimitUnion({
    mode: ZPolicyMode,
    onStoreFailure: ZOnStoreFailure,
    durability: ZDurability.optional(),
    global: ZGlobal.optional(),
  }),
);

// ---------------------------------------------------------------------------------------------
// Compile-time agreement with the limiter core

export type IsMutuallyAssignable<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
export type Assert<Condition extends true> = Condition;

/**
 * Fails to compile when the schema and `LimitSpec` in `packages/enforcer/src/limiter/types.ts` drift apart: the
 * parsed limit must be a `LimitSpec` and every `LimitSpec` must be expressible in the schema.
 */
export type LimitSpecAgreesWithLimiter = Assert<IsMutuallyAssignable<TLimitSpec, LimitSpec>>;
/** Fails to compile when `ALGORITHMS` misses an algorithm of the core. */
export type AlgorithmsAreComplete = Assert<
  IsMutuallyAssignable<(typeof ALGORITHMS)[number], Algorithm>
>;
