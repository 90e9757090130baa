/**
 * The RLS v3 `RateLimitResponse` for the enforcer's decisions, one per descriptor in request
 * order. Envoy answers the client 429 when `overall_code` is OVER_LIMIT, with `raw_body` as the
 * body and `response_headers_to_add` on the response (on OK they go on the upstream's response),
 * so a client sees what a Node gateway sends: the `RateLimit` and `RateLimit-Policy` fields,
 * `X-RateLimit-*`, and on a rejection `Retry-After` and the RFC 9457 problem body.
 *
 * A fail-closed limit whose store could not be asked is not a quota rejection: RLS has no code
 * for it, so the service answers the call with gRPC UNAVAILABLE and the gateway's own failure
 * setting (Envoy `failure_mode_deny`) decides, as docs/ratelimit-service.md explains.
 */
import type { DescriptorDecision, Enforcer, EnforcerResult } from "@limitplane/enforcer";
import type { LimitSpec } from "@limitplane/enforcer/limiter";
import { RLS_UNITS, type RlsUnit, rlsUnitOf, rlsUnitOfWindow } from "./rls-units";

/**
 * A descriptor decided by the limit Envoy sent with it (`Enforcer.checkLimitOverride`). Named
 * here, where the service uses it, rather than at the package's root, which keeps what a gateway
 * needs.
 */
export type LimitOverrideDecision = NonNullable<
  Awaited<ReturnType<Enforcer["checkLimitOverride"]>>
>;

export type RlsCode = "OK" | "OVER_LIMIT";
export type { RlsUnit } from "./rls-units";

/** What one descriptor came to. */
export type DescriptorOutcome =
  | { readonly kind: "decided"; readonly result: EnforcerResult }
  | {
      readonly kind: "rule";
      readonly decided: Extract<DescriptorDecision, { kind: "decided" }>;
    }
  /** Decided by the limit the gateway sent with the descriptor, reported as it was sent. */
  | {
      readonly kind: "override";
      readonly decided: LimitOverrideDecision;
      readonly requested: {
        readonly requests_per_unit: number;
        readonly unit: string | number;
      } | null;
    }
  /** A descriptor rule that is unlimited: OK, with the most remaining RLS can say. */
  | { readonly kind: "unlimited" }
  | { readonly kind: "uncovered" };

/** What the answer needs of a decided outcome, whichever way it was decided. */
function decidedParts(outcome: DescriptorOutcome) {
  switch (outcome.kind) {
    case "decided":
      return {
        decision: outcome.result.decision,
        checks: outcome.result.checks,
        http: outcome.result.http,
      };
    case "rule":
    case "override":
      return {
        decision: outcome.decided.decision,
        checks: [outcome.decided.check],
        http: outcome.decided.http,
      };
    case "unlimited":
    case "uncovered":
      return null;
    default: {
      const unknown: never = outcome;
      throw new TypeError(`unknown outcome ${JSON.stringify(unknown)}`);
    }
  }
}

/** The response message as grpc-js serializes it (proto field names). */
export interface RlsResponseMessage {
  readonly overall_code: RlsCode;
  readonly statuses: readonly {
    readonly code: RlsCode;
    readonly current_limit: {
      readonly name: string;
      readonly requests_per_unit: number;
      readonly unit: RlsUnit;
    } | null;
    readonly limit_remaining: number;
    readonly duration_until_reset: { readonly seconds: number; readonly nanos: number } | null;
  }[];
  readonly response_headers_to_add: readonly { readonly key: string; readonly value: string }[];
  readonly raw_body: Buffer;
}

export type RlsAnswer =
  | { readonly kind: "response"; readonly message: RlsResponseMessage }
  | { readonly kind: "unavailable"; readonly scope: string; readonly retryAfterMs: number };

const UINT32_MAX = 4_294_967_295;

/**
 * A limit as RLS's `requests_per_unit` per `unit`. A window of exactly one unit (a week, a month
 * of 30 days and a year of 365 included, as envoyproxy/ratelimit counts them) reads as its limit;
 * anything else (a 90 s window, a token bucket) as its sustained rate in the smallest unit where
 * that rate is at least 1, rounded down so the gateway is never told of more than exists.
 */
export function currentLimitOf(spec: LimitSpec): { requests_per_unit: number; unit: RlsUnit } {
  let perSecond: number;
  switch (spec.algorithm) {
    case "fixed-window":
    case "sliding-log":
    case "sliding-window": {
      const whole = rlsUnitOfWindow(spec.windowMs);
      if (whole !== undefined) {
        return { requests_per_unit: clampUint32(Math.floor(spec.limit)), unit: whole.name };
      }
      perSecond = spec.limit / (spec.windowMs / 1000);
      break;
    }
    case "token-bucket":
      perSecond = spec.refillPerSec;
      break;
    case "leaky-meter":
      perSecond = spec.drainPerSec;
      break;
    default: {
      const unknown: never = spec;
      throw new TypeError(`unknown limit: ${JSON.stringify(unknown)}`);
    }
  }
  for (const unit of RLS_UNITS) {
    const perUnit = Math.floor((perSecond * unit.windowMs) / 1000 + 1e-9);
    if (perUnit >= 1) return { requests_per_unit: clampUint32(perUnit), unit: unit.name };
  }
  // Less than one a year (the longest unit): none a year, rounded down as above.
  return { requests_per_unit: 0, unit: "YEAR" };
}

function clampUint32(value: number): number {
  return Math.min(UINT32_MAX, Math.max(0, value));
}

function statusOf(outcome: DescriptorOutcome): RlsResponseMessage["statuses"][number] {
  if (outcome.kind === "unlimited") {
    return {
      code: "OK",
      current_limit: null,
      limit_remaining: UINT32_MAX,
      duration_until_reset: null,
    };
  }
  const parts = decidedParts(outcome);
  if (parts === null) {
    return { code: "OK", current_limit: null, limit_remaining: 0, duration_until_reset: null };
  }
  const { decision, checks } = parts;
  const binding = checks.find((check) => check.scope === decision.scope);
  const resetMs = Math.max(0, decision.allowed ? decision.resetAfterMs : decision.retryAfterMs);
  // A deny rule is envoyproxy/ratelimit's `requests_per_unit: 0`, and says so.
  const isDeny = outcome.kind === "rule" && outcome.decided.rule.limit === "deny";
  const requested = outcome.kind === "override" ? outcome.requested : null;
  const requestedUnit = requested === null ? undefined : rlsUnitOf(requested.unit);
  return {
    code: decision.allowed ? "OK" : "OVER_LIMIT",
    current_limit:
      binding === undefined
        ? null
        : requestedUnit !== undefined && requested !== null
          ? {
              name: binding.scope,
              requests_per_unit: clampUint32(requested.requests_per_unit),
              unit: requestedUnit.name,
            }
          : isDeny
            ? { name: binding.scope, requests_per_unit: 0, unit: "SECOND" }
            : { name: binding.scope, ...currentLimitOf(binding.limit) },
    limit_remaining: clampUint32(
      Math.floor(Number.isFinite(decision.remaining) ? decision.remaining : 0),
    ),
    duration_until_reset:
      binding === undefined
        ? null
        : { seconds: Math.floor(resetMs / 1000), nanos: Math.round((resetMs % 1000) * 1e6) },
  };
}

type HeaderList = RlsResponseMessage["response_headers_to_add"];
const NO_HEADERS: HeaderList = Object.freeze([]);

/**
 * The frozen header records of the enforcer's pre-built rejections (`rejection-responses.ts`,
 * one per limit and retry-after second), as RLS header lists, made once each: a flood of
 * rejections then reuses one list, and `rls-encode.ts` its encoded bytes.
 */
const headerLists = new WeakMap<Readonly<Record<string, string>>, HeaderList>();

function headerListOf(headers: Readonly<Record<string, string>>): HeaderList {
  const cached = headerLists.get(headers);
  if (cached !== undefined) return cached;
  const list: HeaderList = Object.freeze(
    Object.entries(headers).map(([key, value]) => Object.freeze({ key, value })),
  );
  if (Object.isFrozen(headers)) headerLists.set(headers, list);
  return list;
}

/** The answer for the descriptors' outcomes, in request order. */
export function buildRlsAnswer(outcomes: readonly DescriptorOutcome[]): RlsAnswer {
  let shown: Pick<EnforcerResult, "decision" | "http"> | null = null;
  for (const outcome of outcomes) {
    const parts = decidedParts(outcome);
    if (parts === null) continue;
    const { http, decision } = parts;
    if (http.status === 503) {
      return {
        kind: "unavailable",
        scope: decision.scope ?? "unknown",
        retryAfterMs: decision.retryAfterMs,
      };
    }
    // The headers of the first rejection, else of the first decided descriptor.
    if (shown === null || (shown.decision.allowed && !decision.allowed)) shown = parts;
  }
  const statuses = outcomes.map(statusOf);
  const isOver = statuses.some((status) => status.code === "OVER_LIMIT");
  return {
    kind: "response",
    message: {
      overall_code: isOver ? "OVER_LIMIT" : "OK",
      statuses,
      response_headers_to_add: shown === null ? NO_HEADERS : headerListOf(shown.http.headers),
      raw_body:
        isOver && shown?.http.bodyText != null ? Buffer.from(shown.http.bodyText) : Buffer.alloc(0),
    },
  };
}
