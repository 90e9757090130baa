/** Tiers, endpoint classes (their match rules, costs and per-tier limits) and the ceilings. */
import { z } from "zod";
import { MAX_COST } from "../limit-math";
import { NAME_PATTERN } from "../names";
import { parsePathPattern } from "../path-pattern";
import {
  countField,
  endpointClassName,
  NAME_RULE,
  strict,
  textField,
  tierName,
} from "../schema-fields";

import { ZAddressLimit, ZAnonymousEndpointLimit, ZCeilingLimit, ZPolicyLimit } from "./limits";

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

export const MAX_MATCH_RULES = 50;

export const costField = countField("cost", MAX_COST, 0);

/** Per-tier limits keyed by tier name. */
export function tierLimitsRecord<Limit extends z.ZodType>(limit: Limit) {
  return z.record(z.string().regex(NAME_PATTERN), limit, {
    error: (issue) =>
      issue.code === "invalid_key"
        ? `tier must be ${NAME_RULE}`
        : "limits must be an object mapping tier names to limits",
  });
}

export const endpointClassShape = {
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
