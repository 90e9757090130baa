/**
 * The policy model as zod schemas: one definition shared by forms, the API, import, the snapshot
 * publisher and the enforcer. Every object is strict (an unknown field is an error, never ignored),
 * every message names the problem in words a person can act on, and cross-field rules run in
 * `superRefine` with the path of the field to fix.
 *
 * `Z...` are schemas, `T...` the parsed (output) types. Defaults are filled in by parsing, so a
 * parsed document states every mode and failure policy explicitly.
 */
import { z } from "zod";
import { LIMIT_BOUNDS } from "../limiter/arguments";
import type { Algorithm, LimitSpec } from "../limiter/types";
import { fieldErrorsFromZod, type ParseResult, type PolicyFieldError } from "./errors";
import { checkIncidentGuardrails, DEFAULT_GUARDRAILS } from "./guardrails";
import {
  limitSize,
  limitSizeField,
  MAX_COST,
  MAX_LIMIT_COUNT,
  MAX_RATE_PER_SEC,
  MAX_WINDOW_MS,
  MIN_RATE_PER_SEC,
} from "./limit-math";
import {
  countField,
  endpointClassName,
  NAME_RULE,
  numberField,
  rateField,
  recordId,
  strict,
  textField,
  tierName,
  ZCanonicalInstant,
  ZCustomerId,
  ZInstant,
} from "./schema-fields";

export { ZCanonicalInstant, ZCustomerId, ZInstant };

import { NAME_PATTERN } from "./names";
import { parsePathPattern, pathPatternKey } from "./path-pattern";
import { parseScope } from "./scope";

// ---------------------------------------------------------------------------------------------
// Limits

export const ALGORITHMS = [
  "fixed-window",
  "sliding-log",
  "sliding-window",
  "token-bucket",
  "leaky-meter",
] as const satisfies readonly Algorithm[];

const windowMsField = countField("windowMs", MAX_WINDOW_MS);

const LIMIT_SHAPES = {
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
function refillsInTime<T extends z.ZodType>(
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

const algorithmError = {
  error: (issue: { code?: string }) =>
    issue.code === "invalid_union"
      ? `algorithm must be one of: ${ALGORITHMS.join(", ")}`
      : "expected a limit object with an algorithm field",
};

/**
 * A limit as the limiter core takes it (`packages/enforcer/src/limiter/types.ts`), discriminated on `algorithm`:
 * fixed-window, sliding-log and sliding-window take `{ limit, windowMs }`; token-bucket
 * `{ capacity, refillPerSec }`; leaky-meter `{ burst, drainPerSec }`. Counts are whole numbers from
 * 1 to 1e9, windows 1 ms to 30 days, rates (fractional allowed) from 0.000001 to 1e9 per second.
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

/** The limit union with `extra` fields (mode, failure policy) added to every algorithm. */
function policyLimitUnion<Extra extends z.ZodRawShape>(extra: Extra) {
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

/** A policy limit whose `mode` defaults to enforce and `onStoreFailure` to `defaultOnStoreFailure`. */
function policyLimitSchema(defaultOnStoreFailure: TOnStoreFailure) {
  return policyLimitUnion({
    mode: ZPolicyMode.default("enforce"),
    onStoreFailure: ZOnStoreFailure.default(defaultOnStoreFailure),
  });
}

/**
 * A limit as a policy holds it: a {@link ZLimitSpec} plus `mode` (default `enforce`) and
 * `onStoreFailure` (default `open` here; ceilings and anonymous limits default differently, see
 * {@link ON_STORE_FAILURE_DEFAULTS}).
 */
export const ZPolicyLimit = policyLimitSchema(ON_STORE_FAILURE_DEFAULTS.customer);
export type TPolicyLimit = z.output<typeof ZPolicyLimit>;

const ZCeilingLimit = policyLimitSchema(ON_STORE_FAILURE_DEFAULTS.ceiling);
const ZAddressLimit = policyLimitSchema(ON_STORE_FAILURE_DEFAULTS.address);
const ZAnonymousEndpointLimit = policyLimitSchema(ON_STORE_FAILURE_DEFAULTS.anonymousEndpoint);
/** Compiled output states both fields: snapshots use this. */
const ZExplicitPolicyLimit = policyLimitUnion({
  mode: ZPolicyMode,
  onStoreFailure: ZOnStoreFailure,
});

// ---------------------------------------------------------------------------------------------
// Tiers, endpoint classes, ceilings

/** A tier: what operators sell (free, pro, enterprise, and any they add) and its account limit. */
export const ZTier = strict({
  /** Stable name, used in scopes (`tier:pro`) and sent by gateways. */
  name: tierName("tier name"),
  /** What the console shows. */
  displayName: textField("displayName", 80).nullable().default(null),
  /** The account layer's starting limit for every customer of this tier (scope `tier:T`). */
  limit: ZPolicyLimit,
});
export type TTier = z.output<typeof ZTier>;

/** An HTTP method (upper case, as servers send it) or `*` for any. */
export const ZMethod = z.string({ error: "method is required" }).regex(/^(?:\*|[A-Z]{1,20})$/, {
  error: 'method must be an upper-case HTTP method such as GET or POST, or "*" for any method',
});

/** A path pattern: see `path-pattern.ts` for the grammar. */
export const ZPathPattern = z
  .string({ error: "path pattern is required" })
  .superRefine((value, ctx) => {
    const parsed = parsePathPattern(value);
    if (!parsed.ok) ctx.addIssue({ code: "custom", message: parsed.message });
  });

/** One rule saying which requests belong to an endpoint class. */
export const ZEndpointMatch = strict({ method: ZMethod, path: ZPathPattern });
export type TEndpointMatch = z.output<typeof ZEndpointMatch>;

/** How anonymous requests to an endpoint class are keyed. */
export const ZKeyBy = z.enum(["address", "address-and-route"], {
  error: "keyBy must be one of: address, address-and-route",
});
export type TKeyBy = z.output<typeof ZKeyBy>;

const MAX_MATCH_RULES = 50;

const costField = countField("cost", MAX_COST, 0);

/** Per-tier limits keyed by tier name. */
function tierLimitsRecord<Limit extends z.ZodType>(limit: Limit) {
  return z.record(z.string().regex(NAME_PATTERN), limit, {
    error: (issue) =>
      issue.code === "invalid_key"
        ? `tier must be ${NAME_RULE}`
        : "limits must be an object mapping tier names to limits",
  });
}

const endpointClassShape = {
  /** Stable name, used in scopes (`tier:pro/endpoint:reports`). */
  name: endpointClassName("endpoint class name"),
  displayName: textField("displayName", 80).nullable().default(null),
  /**
   * Which requests belong to the class. May be empty for a class that gateways name directly or
   * that serves as the default class. See `endpoint-matcher.ts` for the match order.
   */
  match: z
    .array(ZEndpointMatch)
    .max(MAX_MATCH_RULES, {
      error: `an endpoint class takes at most ${MAX_MATCH_RULES} match rules`,
    })
    .default([]),
  /**
   * Units of cost one request spends on every limit it is checked against: 1 for an ordinary call,
   * more for an expensive one (a report at 10 makes the same budget go ten times less far), 0 for
   * a call that is counted but never limited (enforcers may skip the store for it).
   * @default 1
   */
  cost: costField.default(1),
  /** The endpoint layer's starting limit per tier name (scope `tier:T/endpoint:E`). */
  limits: tierLimitsRecord(ZPolicyLimit).default({}),
  /**
   * The limit on anonymous requests to this class, keyed by address (scope `address/endpoint:E`).
   * Fails closed by default.
   */
  anonymousLimit: ZAnonymousEndpointLimit.nullable().default(null),
  /** A ceiling on this class for every subject, never replaced (scope `ceiling/endpoint:E`). */
  ceiling: ZCeilingLimit.nullable().default(null),
  /**
   * How anonymous requests are keyed: `address` (the client address), or `address-and-route` (the
   * address and this class together, for sign-in-like endpoints: attempts there neither draw on
   * nor are blocked by the address's other traffic).
   * @default "address"
   */
  keyBy: ZKeyBy.default("address"),
};

/** A group of endpoints limited together, with the requests that belong to it. */
export const ZEndpointClass = strict(endpointClassShape);
export type TEndpointClass = z.output<typeof ZEndpointClass>;

/**
 * Ceilings: protection that applies whatever the tier and is never replaced by an override.
 * A raise above a ceiling is allowed; the ceiling still applies and binds.
 */
export const ZCeilings = strict({
  /** Every authenticated request, per customer (scope `ceiling`). Defaults to failing `local`. */
  perCustomer: ZCeilingLimit,
  /**
   * Every anonymous request, per client address (scope `address`). Keep it loose: an office or a
   * mobile carrier puts many people behind one address. Defaults to failing `local`.
   */
  perAddress: ZAddressLimit,
});
export type TCeilings = z.output<typeof ZCeilings>;

// ---------------------------------------------------------------------------------------------
// Customers and overrides

/** A customer in the registry operators search. Enforcers never see the registry. */
export const ZCustomer = strict({
  id: ZCustomerId,
  displayName: textField("displayName", 200),
  /** The tier operators know the customer by. Gateways send the tier they authenticated. */
  tier: tierName(),
});
export type TCustomer = z.output<typeof ZCustomer>;

/** A standing limit for one customer, replacing its tier's limit for one layer. */
export const ZCustomerOverride = strict({
  customerId: ZCustomerId,
  /** The endpoint class it applies to, or null for the account layer (all endpoints). */
  endpointClass: endpointClassName().nullable(),
  limit: ZPolicyLimit,
});
export type TCustomerOverride = z.output<typeof ZCustomerOverride>;

/** Hard bound on an incident factor, whatever the guardrails say. */
export const MAX_FACTOR = 1000;

const factorField = numberField("factor")
  .gt(0, { error: "factor must be more than 0" })
  .max(MAX_FACTOR, { error: `factor must be at most ${MAX_FACTOR}` });

/** A URL for a ticket: http or https only, so a console link can never run script. */
export const ZTicketUrl = z
  .url({ protocol: /^https?$/, error: "ticketUrl must be an http:// or https:// URL" })
  .max(2048, { error: "ticketUrl must be at most 2048 characters" });

function refineIncidentShape(
  incident: { factor: number | null; limit: unknown; startsAt: string; expiresAt: string },
  ctx: z.RefinementCtx,
): void {
  if (incident.factor === null && incident.limit === null) {
    ctx.addIssue({
      code: "custom",
      path: ["factor"],
      message: "give either a factor (2 doubles the limit, 0.5 halves it) or an absolute limit",
    });
  } else if (incident.factor !== null && incident.limit !== null) {
    ctx.addIssue({
      code: "custom",
      path: ["limit"],
      message: "give either a factor or an absolute limit, not both",
    });
  }
  if (!(Date.parse(incident.expiresAt) > Date.parse(incident.startsAt))) {
    ctx.addIssue({
      code: "custom",
      path: ["expiresAt"],
      message: "expiresAt must be after startsAt",
    });
  }
}

/**
 * A temporary raise or cut for one customer and one layer. It applies while
 * `startsAt <= now < expiresAt` (wall clock) and stops by itself at its expiry.
 */
export const ZIncidentOverride = strict({
  /** Stable id (scope `incident:ID`). */
  id: recordId("incident id"),
  customerId: ZCustomerId,
  /** The endpoint class it applies to, or null for the account layer (all endpoints). */
  endpointClass: endpointClassName().nullable(),
  /**
   * Multiplies the limit it replaces (size and rate; a window keeps its length). Exactly one of
   * `factor` and `limit` is given.
   */
  factor: factorField.nullable().default(null),
  /** An absolute limit replacing it, compared with it by the guardrails. */
  limit: ZLimitSpec.nullable().default(null),
  startsAt: ZInstant,
  /** Required: every incident override ends by itself. */
  expiresAt: ZInstant,
  /** Who is responsible for it (an operator's id or email). */
  owner: textField("owner", 200),
  reason: textField("reason", 1000),
  ticketUrl: ZTicketUrl.nullable().default(null),
}).superRefine(refineIncidentShape);
export type TIncidentOverride = z.output<typeof ZIncidentOverride>;

/** The scope kinds a dry-run candidate may stand in for: the rules operators edit. */
export const CANDIDATE_TARGET_KINDS = ["tier", "ceiling", "address"] as const;

/**
 * What a dry-run candidate would replace, as a scope: `tier:T`, `tier:T/endpoint:E` (also a new
 * endpoint limit), `ceiling`, `ceiling/endpoint:E`, `address` or `address/endpoint:E`.
 */
export const ZCandidateTarget = z
  .string({ error: "target is required" })
  .superRefine((value, ctx) => {
    const scope = parseScope(value);
    if (scope === null || !(CANDIDATE_TARGET_KINDS as readonly string[]).includes(scope.kind)) {
      ctx.addIssue({
        code: "custom",
        message:
          "target must be the scope the candidate would replace: tier:T, tier:T/endpoint:E, ceiling, ceiling/endpoint:E, address or address/endpoint:E",
      });
    }
  });

/**
 * A limit evaluated in dry-run next to the one it would replace, for the same subjects, on its own
 * bucket (`candidate:ID`): it never rejects and never consumes from what is enforced.
 */
export const ZDryRunCandidate = strict({
  /** Stable id (scope and bucket `candidate:ID`). */
  id: recordId("candidate id"),
  target: ZCandidateTarget,
  limit: ZLimitSpec,
});
export type TDryRunCandidate = z.output<typeof ZDryRunCandidate>;

/** Bounds on incident overrides. See `guardrails.ts`. */
export const ZGuardrails = strict({
  maxIncidentFactor: numberField("maxIncidentFactor")
    .gt(1, { error: "maxIncidentFactor must be more than 1" })
    .max(MAX_FACTOR, { error: `maxIncidentFactor must be at most ${MAX_FACTOR}` })
    .default(DEFAULT_GUARDRAILS.maxIncidentFactor),
  maxIncidentDurationMs: countField("maxIncidentDurationMs", MAX_WINDOW_MS, 60_000).default(
    DEFAULT_GUARDRAILS.maxIncidentDurationMs,
  ),
});
export type TGuardrails = z.output<typeof ZGuardrails>;

// ---------------------------------------------------------------------------------------------
// Cross-field rules shared by the document and the snapshot

/** What the document and the compiled snapshot have in common, for shared cross-field rules. */
export interface PolicyCore {
  readonly defaultTier: string;
  readonly defaultEndpointClass: string;
  readonly tiers: readonly { readonly name: string }[];
  readonly endpointClasses: readonly {
    readonly name: string;
    readonly match: readonly { readonly method: string; readonly path: string }[];
    readonly limits: Readonly<Record<string, unknown>>;
  }[];
  readonly customerOverrides: readonly {
    readonly customerId: string;
    readonly endpointClass: string | null;
  }[];
  readonly incidentOverrides: readonly {
    readonly id: string;
    readonly endpointClass: string | null;
  }[];
  readonly dryRunCandidates: readonly { readonly id: string; readonly target: string }[];
}

type AddIssue = (path: (string | number)[], message: string) => void;

function issueAdder(ctx: z.RefinementCtx): AddIssue {
  return (path, message) => ctx.addIssue({ code: "custom", path, message });
}

/** Index of the first item per key; reports every later duplicate. */
function indexUnique<T>(
  items: readonly T[],
  keyOf: (item: T) => string,
  onDuplicate: (index: number, firstIndex: number, key: string) => void,
): Map<string, number> {
  const seen = new Map<string, number>();
  items.forEach((item, index) => {
    const key = keyOf(item);
    const first = seen.get(key);
    if (first === undefined) seen.set(key, index);
    else onDuplicate(index, first, key);
  });
  return seen;
}

/**
 * The cross-field rules a compiled policy must meet (references, duplicates, one class per method
 * and pattern), as field errors: what the snapshot schema checks, for a policy held as entries.
 */
export function checkSnapshotPolicyCore(policy: PolicyCore): PolicyFieldError[] {
  const errors: PolicyFieldError[] = [];
  checkPolicyCore(policy, (path, message) => errors.push({ path, message }));
  return errors;
}

function checkPolicyCore(policy: PolicyCore, add: AddIssue): void {
  const tiers = indexUnique(
    policy.tiers,
    (tier) => tier.name,
    (index, first, name) =>
      add(["tiers", index, "name"], `tier "${name}" is already defined at tiers[${first}]`),
  );
  const classes = indexUnique(
    policy.endpointClasses,
    (endpointClass) => endpointClass.name,
    (index, first, name) =>
      add(
        ["endpointClasses", index, "name"],
        `endpoint class "${name}" is already defined at endpointClasses[${first}]`,
      ),
  );
  const tierExists = (name: string) => tiers.has(name);
  const classExists = (name: string) => classes.has(name);

  if (!tierExists(policy.defaultTier)) {
    add(["defaultTier"], `defaultTier names tier "${policy.defaultTier}", which is not defined`);
  }
  if (!classExists(policy.defaultEndpointClass)) {
    add(
      ["defaultEndpointClass"],
      `defaultEndpointClass names endpoint class "${policy.defaultEndpointClass}", which is not defined`,
    );
  }

  const rules = new Map<string, { classIndex: number; ruleIndex: number; name: string }>();
  policy.endpointClasses.forEach((endpointClass, classIndex) => {
    for (const tier of Object.keys(endpointClass.limits)) {
      if (!tierExists(tier)) {
        add(
          ["endpointClasses", classIndex, "limits", tier],
          `there is no tier "${tier}"; define it under tiers or remove this limit`,
        );
      }
    }
    endpointClass.match.forEach((rule, ruleIndex) => {
      const parsed = parsePathPattern(rule.path);
      if (!parsed.ok) return;
      const key = `${rule.method} ${pathPatternKey(parsed.pattern)}`;
      const first = rules.get(key);
      if (first === undefined) {
        rules.set(key, { classIndex, ruleIndex, name: endpointClass.name });
      } else {
        add(
          ["endpointClasses", classIndex, "match", ruleIndex],
          `${key} is already matched by endpoint class "${first.name}" (endpointClasses[${first.classIndex}].match[${first.ruleIndex}]); a method and path pattern may belong to one class only`,
        );
      }
    });
  });

  indexUnique(
    policy.customerOverrides,
    (override) => `${override.customerId} ${override.endpointClass ?? ""}`,
    (index, first) =>
      add(
        ["customerOverrides", index],
        `customerOverrides[${first}] already overrides this customer for the same scope; edit that one instead`,
      ),
  );
  policy.customerOverrides.forEach((override, index) => {
    if (override.endpointClass !== null && !classExists(override.endpointClass)) {
      add(
        ["customerOverrides", index, "endpointClass"],
        `there is no endpoint class "${override.endpointClass}"`,
      );
    }
  });

  indexUnique(
    policy.incidentOverrides,
    (incident) => incident.id,
    (index, first, id) =>
      add(
        ["incidentOverrides", index, "id"],
        `incident id "${id}" is already used by incidentOverrides[${first}]`,
      ),
  );
  policy.incidentOverrides.forEach((incident, index) => {
    if (incident.endpointClass !== null && !classExists(incident.endpointClass)) {
      add(
        ["incidentOverrides", index, "endpointClass"],
        `there is no endpoint class "${incident.endpointClass}"`,
      );
    }
  });

  indexUnique(
    policy.dryRunCandidates,
    (candidate) => candidate.id,
    (index, first, id) =>
      add(
        ["dryRunCandidates", index, "id"],
        `candidate id "${id}" is already used by dryRunCandidates[${first}]`,
      ),
  );
  policy.dryRunCandidates.forEach((candidate, index) => {
    const scope = parseScope(candidate.target);
    if (scope === null) return;
    if (scope.kind === "tier" && !tierExists(scope.tier)) {
      add(["dryRunCandidates", index, "target"], `there is no tier "${scope.tier}"`);
    }
    if (
      "endpointClass" in scope &&
      scope.endpointClass !== null &&
      !classExists(scope.endpointClass)
    ) {
      add(
        ["dryRunCandidates", index, "target"],
        `there is no endpoint class "${scope.endpointClass}"`,
      );
    }
  });
}

// ---------------------------------------------------------------------------------------------
// The policy document

/** At most this many customer overrides (one per customer and layer), as many as customers. */
export const MAX_CUSTOMER_OVERRIDES = 1_000_000;

const documentShape = {
  /** The format of this document. Only 1 exists. */
  schemaVersion: z.literal(1, { error: "schemaVersion must be 1" }).default(1),
  /**
   * The tier used when a gateway sends no tier or one the policy does not define. Name the most
   * restrictive tier: a customer must never get more than they pay for because of a typo.
   */
  defaultTier: tierName("defaultTier"),
  /** The endpoint class of every request no match rule claims. */
  defaultEndpointClass: endpointClassName("defaultEndpointClass"),
  guardrails: ZGuardrails.prefault({}),
  tiers: z
    .array(ZTier)
    .min(1, { error: "define at least one tier" })
    .max(100, { error: "a policy takes at most 100 tiers" }),
  endpointClasses: z
    .array(ZEndpointClass)
    .min(1, { error: "define at least one endpoint class (the default class)" })
    .max(500, { error: "a policy takes at most 500 endpoint classes" }),
  ceilings: ZCeilings,
  customers: z
    .array(ZCustomer)
    .max(1_000_000, { error: "a policy document takes at most 1,000,000 customers" })
    .default([]),
  customerOverrides: z
    .array(ZCustomerOverride)
    .max(MAX_CUSTOMER_OVERRIDES, { error: "a policy takes at most 1,000,000 customer overrides" })
    .default([]),
  incidentOverrides: z
    .array(ZIncidentOverride)
    .max(10_000, { error: "a policy takes at most 10,000 incident overrides" })
    .default([]),
  dryRunCandidates: z
    .array(ZDryRunCandidate)
    .max(100, { error: "a policy takes at most 100 dry-run candidates" })
    .default([]),
};

/**
 * A whole policy: what operators edit, export and import. Beyond each field's own rules it checks
 * that every name refers to something defined, that nothing is defined twice, that no request
 * could be unadmittable because its cost exceeds a limit's size, that incident overrides for one
 * customer and layer do not overlap in time, and every incident against the guardrails.
 */
export const ZPolicyDocument = strict(documentShape).superRefine((doc, ctx) => {
  const add = issueAdder(ctx);
  checkPolicyCore(doc, add);
  checkRegistry(doc, add);
  checkIncidents(doc, add);
  checkCosts(doc, add);
});
export type TPolicyDocument = z.output<typeof ZPolicyDocument>;
/** A policy document as written, before defaults are filled in. */
export type TPolicyDocumentInput = z.input<typeof ZPolicyDocument>;

function checkRegistry(doc: TPolicyDocument, add: AddIssue): void {
  const tiers = new Set(doc.tiers.map((tier) => tier.name));
  const customers = indexUnique(
    doc.customers,
    (customer) => customer.id,
    (index, first, id) =>
      add(["customers", index, "id"], `customer "${id}" is already listed at customers[${first}]`),
  );
  doc.customers.forEach((customer, index) => {
    if (!tiers.has(customer.tier))
      add(["customers", index, "tier"], `there is no tier "${customer.tier}"`);
  });
  const requireCustomer = (collection: string, index: number, customerId: string) => {
    if (!customers.has(customerId)) {
      add([collection, index, "customerId"], `there is no customer "${customerId}" in customers`);
    }
  };
  for (const [index, override] of doc.customerOverrides.entries()) {
    requireCustomer("customerOverrides", index, override.customerId);
  }
  for (const [index, incident] of doc.incidentOverrides.entries()) {
    requireCustomer("incidentOverrides", index, incident.customerId);
  }
}

function checkIncidents(doc: TPolicyDocument, add: AddIssue): void {
  const index = indexReplaceable(doc);
  doc.incidentOverrides.forEach((incident, position) => {
    const replaced = replacedLimitFromIndex(index, incident.customerId, incident.endpointClass);
    for (const error of checkIncidentGuardrails(incident, {
      guardrails: doc.guardrails,
      replacedLimit: replaced,
    })) {
      add(["incidentOverrides", position, ...error.path], error.message);
    }
  });

  const byScope = new Map<string, number[]>();
  doc.incidentOverrides.forEach((incident, position) => {
    const key = `${incident.customerId} ${incident.endpointClass ?? ""}`;
    const list = byScope.get(key);
    if (list === undefined) byScope.set(key, [position]);
    else list.push(position);
  });
  for (const positions of byScope.values()) {
    const sorted = positions
      .map((position) => ({ position, incident: doc.incidentOverrides[position] }))
      .flatMap(({ position, incident }) => (incident === undefined ? [] : [{ position, incident }]))
      .sort((a, b) => Date.parse(a.incident.startsAt) - Date.parse(b.incident.startsAt));
    for (let i = 1; i < sorted.length; i++) {
      const previous = sorted[i - 1];
      const current = sorted[i];
      if (previous === undefined || current === undefined) continue;
      if (Date.parse(current.incident.startsAt) < Date.parse(previous.incident.expiresAt)) {
        add(
          ["incidentOverrides", current.position, "startsAt"],
          `overlaps incident "${previous.incident.id}" (${previous.incident.startsAt} to ${previous.incident.expiresAt}) for the same customer and scope; extend or revert that one instead`,
        );
      }
    }
  }
}

/** Every limit that could apply to a request of a class must be able to hold one request of it. */
function checkCosts(doc: TPolicyDocument, add: AddIssue): void {
  let maxCost = 0;
  let maxCostClass = "";
  for (const endpointClass of doc.endpointClasses) {
    if (endpointClass.cost > maxCost) {
      maxCost = endpointClass.cost;
      maxCostClass = endpointClass.name;
    }
  }
  const requireSize = (
    path: (string | number)[],
    limit: { mode?: TPolicyMode } & LimitSpec,
    cost: number,
    className: string,
  ) => {
    if (limit.mode === "off" || limitSize(limit) >= cost) return;
    const field = limitSizeField(limit);
    add(
      [...path, field],
      `${field} ${limitSize(limit)} is less than the ${cost} units one request to endpoint class "${className}" costs: no such request could ever be admitted`,
    );
  };
  const classCost = new Map(doc.endpointClasses.map((c) => [c.name, c.cost]));
  const costOf = (endpointClass: string | null) =>
    endpointClass === null
      ? { cost: maxCost, className: maxCostClass }
      : { cost: classCost.get(endpointClass) ?? 0, className: endpointClass };

  for (const [index, tier] of doc.tiers.entries()) {
    requireSize(["tiers", index, "limit"], tier.limit, maxCost, maxCostClass);
  }
  requireSize(["ceilings", "perCustomer"], doc.ceilings.perCustomer, maxCost, maxCostClass);
  requireSize(["ceilings", "perAddress"], doc.ceilings.perAddress, maxCost, maxCostClass);
  doc.endpointClasses.forEach((endpointClass, index) => {
    const path = ["endpointClasses", index];
    for (const [tier, limit] of Object.entries(endpointClass.limits)) {
      requireSize([...path, "limits", tier], limit, endpointClass.cost, endpointClass.name);
    }
    if (endpointClass.anonymousLimit !== null) {
      requireSize(
        [...path, "anonymousLimit"],
        endpointClass.anonymousLimit,
        endpointClass.cost,
        endpointClass.name,
      );
    }
    if (endpointClass.ceiling !== null) {
      requireSize(
        [...path, "ceiling"],
        endpointClass.ceiling,
        endpointClass.cost,
        endpointClass.name,
      );
    }
  });
  doc.customerOverrides.forEach((override, index) => {
    const { cost, className } = costOf(override.endpointClass);
    requireSize(["customerOverrides", index, "limit"], override.limit, cost, className);
  });
  doc.incidentOverrides.forEach((incident, index) => {
    if (incident.limit === null) return;
    const { cost, className } = costOf(incident.endpointClass);
    requireSize(["incidentOverrides", index, "limit"], incident.limit, cost, className);
  });
  doc.dryRunCandidates.forEach((candidate, index) => {
    const scope = parseScope(candidate.target);
    if (scope === null || !("endpointClass" in scope)) return;
    const { cost, className } = costOf(scope.endpointClass);
    requireSize(["dryRunCandidates", index, "limit"], candidate.limit, cost, className);
  });
}

/** Lookups for {@link findReplacedLimit}, built once per document. */
interface ReplaceableIndex {
  readonly customerTier: ReadonlyMap<string, string>;
  readonly overrides: ReadonlyMap<string, TPolicyLimit>;
  readonly tierLimits: ReadonlyMap<string, TPolicyLimit>;
  readonly classLimits: ReadonlyMap<string, Readonly<Record<string, TPolicyLimit>>>;
}

function indexReplaceable(doc: TPolicyDocument): ReplaceableIndex {
  return {
    customerTier: new Map(doc.customers.map((customer) => [customer.id, customer.tier])),
    overrides: new Map(
      doc.customerOverrides.map((override) => [
        `${override.customerId} ${override.endpointClass ?? ""}`,
        override.limit,
      ]),
    ),
    tierLimits: new Map(doc.tiers.map((tier) => [tier.name, tier.limit])),
    classLimits: new Map(doc.endpointClasses.map((c) => [c.name, c.limits])),
  };
}

function replacedLimitFromIndex(
  index: ReplaceableIndex,
  customerId: string,
  endpointClass: string | null,
): TPolicyLimit | null {
  const enforced = (limit: TPolicyLimit | undefined) =>
    limit !== undefined && limit.mode === "enforce" ? limit : null;
  const override = enforced(index.overrides.get(`${customerId} ${endpointClass ?? ""}`));
  if (override !== null) return override;
  const tier = index.customerTier.get(customerId);
  if (tier === undefined) return null;
  if (endpointClass === null) return enforced(index.tierLimits.get(tier));
  const limits = index.classLimits.get(endpointClass);
  return limits !== undefined && Object.hasOwn(limits, tier) ? enforced(limits[tier]) : null;
}

/**
 * The enforced limit an incident override for `customerId` on `endpointClass` (null: all
 * endpoints) would replace: the customer's enforced override for that layer, else its registry
 * tier's enforced limit for that layer, else null. This is what a factor scales and what an
 * absolute limit is compared with by the guardrails.
 */
export function findReplacedLimit(
  doc: TPolicyDocument,
  customerId: string,
  endpointClass: string | null,
): TPolicyLimit | null {
  return replacedLimitFromIndex(indexReplaceable(doc), customerId, endpointClass);
}

/**
 * Parses untrusted input (an import file, a request body) as a policy document: the document with
 * every default filled in, or every problem found, each with its path.
 */
export function parsePolicyDocument(input: unknown): ParseResult<TPolicyDocument> {
  const result = ZPolicyDocument.safeParse(input);
  if (result.success) return { ok: true, value: result.data };
  return { ok: false, errors: fieldErrorsFromZod(result.error) };
}

// ---------------------------------------------------------------------------------------------
// The compiled snapshot

export const ZSnapshotTier = strict({ name: tierName("tier name"), limit: ZExplicitPolicyLimit });

export const ZSnapshotEndpointClass = strict({
  name: endpointClassName("endpoint class name"),
  match: z.array(ZEndpointMatch).max(MAX_MATCH_RULES),
  cost: costField,
  limits: tierLimitsRecord(ZExplicitPolicyLimit),
  anonymousLimit: ZExplicitPolicyLimit.nullable(),
  ceiling: ZExplicitPolicyLimit.nullable(),
  keyBy: ZKeyBy,
});

export const ZSnapshotIncidentOverride = strict({
  id: recordId("incident id"),
  customerId: ZCustomerId,
  endpointClass: endpointClassName().nullable(),
  factor: factorField.nullable(),
  limit: ZLimitSpec.nullable(),
  startsAt: ZCanonicalInstant,
  expiresAt: ZCanonicalInstant,
}).superRefine(refineIncidentShape);

export const ZSnapshotCustomerOverride = strict({
  customerId: ZCustomerId,
  endpointClass: endpointClassName().nullable(),
  limit: ZExplicitPolicyLimit,
});

/** The settings an enforcer needs: the defaults and the ceilings (guardrails are write-time). */
export const ZSnapshotSettings = strict({
  defaultTier: tierName("defaultTier"),
  defaultEndpointClass: endpointClassName("defaultEndpointClass"),
  ceilings: strict({ perCustomer: ZExplicitPolicyLimit, perAddress: ZExplicitPolicyLimit }),
});

/**
 * What an enforcer needs of a policy and nothing more: no customer registry (millions of
 * customers cost nothing), no display names, no incident owners or reasons, no guardrails (they
 * are write-time rules). Every default is explicit.
 */
export const ZSnapshotPolicy = strict({
  defaultTier: tierName("defaultTier"),
  defaultEndpointClass: endpointClassName("defaultEndpointClass"),
  tiers: z.array(ZSnapshotTier).min(1, { error: "a snapshot needs at least one tier" }),
  endpointClasses: z
    .array(ZSnapshotEndpointClass)
    .min(1, { error: "a snapshot needs at least one endpoint class" }),
  ceilings: strict({ perCustomer: ZExplicitPolicyLimit, perAddress: ZExplicitPolicyLimit }),
  customerOverrides: z.array(ZSnapshotCustomerOverride),
  incidentOverrides: z.array(ZSnapshotIncidentOverride),
  dryRunCandidates: z.array(ZDryRunCandidate),
}).superRefine((policy, ctx) => checkPolicyCore(policy, issueAdder(ctx)));
export type TSnapshotPolicy = z.output<typeof ZSnapshotPolicy>;

/** The snapshot format this build reads and writes. */
export const SNAPSHOT_SCHEMA_VERSION = 1;

/** A compiled, published policy. See `snapshot.ts`. */
export const ZSnapshot = strict({
  schemaVersion: z.literal(SNAPSHOT_SCHEMA_VERSION, {
    error: `schemaVersion must be ${SNAPSHOT_SCHEMA_VERSION}: this enforcer reads snapshot format ${SNAPSHOT_SCHEMA_VERSION} only`,
  }),
  /** Increases by at least 1 with every publication; enforcers never go back to a lower one. */
  version: countField("version", Number.MAX_SAFE_INTEGER),
  /** When the control plane compiled it (wall clock). */
  compiledAt: ZCanonicalInstant,
  /** Lowercase hex SHA-256 of the canonical JSON of every other field. */
  checksum: z.string({ error: "checksum is required" }).regex(/^[0-9a-f]{64}$/, {
    error: "checksum must be 64 lowercase hexadecimal characters (SHA-256)",
  }),
  policy: ZSnapshotPolicy,
});
export type TSnapshot = z.output<typeof ZSnapshot>;

// ---------------------------------------------------------------------------------------------
// Compile-time agreement with the limiter core

type IsMutuallyAssignable<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
type Assert<Condition extends true> = Condition;

/**
 * Fails to compile when the schema and `LimitSpec` in `packages/enforcer/src/limiter/types.ts` drift apart: the
 * parsed limit must be a `LimitSpec` and every `LimitSpec` must be expressible in the schema.
 */
export type LimitSpecAgreesWithLimiter = Assert<IsMutuallyAssignable<TLimitSpec, LimitSpec>>;
/** Fails to compile when `ALGORITHMS` misses an algorithm of the core. */
export type AlgorithmsAreComplete = Assert<
  IsMutuallyAssignable<(typeof ALGORITHMS)[number], Algorithm>
>;
