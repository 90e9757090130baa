/**
 * The HTTP contract, as a pure function of a decision and the checks it was made for: the IETF
 * `RateLimit-Policy` and `RateLimit` fields of draft-ietf-httpapi-ratelimit-headers-11, the familiar
 * `X-RateLimit-*` fields for the same limit, and on rejection a problem-details body (RFC 9457,
 * `application/problem+json`) of one of the draft's problem types. The HTTP adapters (Node, Fetch,
 * and Next.js through Fetch) copy the result onto their responses; none builds a body itself.
 *
 * Draft-11 §"Problem Types" (text: https://www.ietf.org/archive/id/draft-ietf-httpapi-ratelimit-headers-11.txt):
 *
 * - A quota rejection is 429 with type `https://iana.org/assignments/http-problem-types#quota-exceeded`
 *   and the draft's extension member `violated-policies`: the names, as they appear in
 *   `RateLimit-Policy`, of every enforced limit that rejected the request. Our own members `code`
 *   (`RATE_LIMITED`), `scope` (the binding limit) and `retryAfterMs` stay as extension members.
 * - A fail-closed rejection (the shared store could not be asked and the limit's policy is
 *   `closed`) is not a quota the client exceeded: 503 with type
 *   `https://iana.org/assignments/http-problem-types#temporary-reduced-capacity`, code
 *   `LIMITER_UNAVAILABLE`, `Retry-After`, and `RateLimit-Policy` for the checks it was resolved to.
 *   It carries no `violated-policies` (nothing was exceeded) and no `RateLimit` or `X-RateLimit-*`
 *   (nothing was measured).
 *
 * Draft-10/-11 field sections followed:
 *
 * - §3 "The "RateLimit-Policy" response header field is a non-empty List of Quota Policy Items.
 *   The Item value MUST be a String." One item per ENFORCED limit, named by its scope. Dry-run
 *   limits are not a quota the client is held to, so they are never advertised.
 * - §3.1.1 "The "q" parameter value MUST be a non-negative Integer." §3.1.3 "The time window MUST
 *   be a non-negative, non-zero, Integer value expressing an interval in seconds [...] Sub-second
 *   precision is not supported." See {@link quotaPolicyOf} for how each algorithm maps to q and w.
 * - §3.1.2 `qu` is omitted: its registered units (`requests`, `content-bytes`,
 *   `concurrent-requests`) cannot say "units of cost", and a request to an endpoint class of cost
 *   5 spends 5 of q. §3.1.4/§4.1.3 `pk` is omitted: our partition keys are customer ids and client
 *   addresses, which §6.1 says to keep out ("avoid returning partition keys that contain sensitive
 *   information").
 * - §4 "RateLimit" is a List of Service Limit Items; §4.1.1 `r` the remaining quota units, a
 *   non-negative Integer; §4.1.2 `t` "the number of seconds until additional quota associated
 *   with the quota policy is made available", a non-negative Integer (delay-seconds). We report
 *   one item: the binding limit, which on admission is the enforced limit with the least
 *   remaining. On admission `t` is the whole seconds until that limit is full again (by then
 *   additional quota has certainly been made available; it is also `X-RateLimit-Reset`). On
 *   rejection `t` equals `Retry-After`, because §6 says "the Retry-After field value SHOULD NOT
 *   reference a point in time earlier than the reset parameter", and the first quota this request
 *   can use arrives then.
 * - Serialization is RFC 9651's (§4.1.1 lists are joined with ", ").
 *
 * `Retry-After` (RFC 9110 §10.2.3, delay-seconds) is the wait rounded UP to whole seconds: rounding
 * down sends the client back before it can be served. A `cost-exceeds-capacity` rejection gets no
 * `Retry-After`, since no wait will ever help (its body says `retryAfterMs: 0`).
 */
import type { LimitCheck, LimitMode, LimitSpec } from "../limiter/types";
import {
  SF_INTEGER_MAX,
  serializeSfInteger,
  serializeSfIntegerParameters,
  serializeSfList,
  serializeSfString,
} from "./structured-fields";

/**
 * The parts of a decision the headers read. The core's `LayeredDecision` and the enforcer's
 * `EnforcerDecision` both fit.
 */
export interface HttpDecision {
  readonly allowed: boolean;
  /** Scope of the binding limit; null when no enforced limit bound (then no limit is reported). */
  readonly scope: string | null;
  readonly retryAfterMs: number;
  readonly reason: string | null;
  readonly outcomes: readonly HttpOutcome[];
}

/** The parts of one limit's outcome the headers read. */
export interface HttpOutcome {
  readonly allowed: boolean;
  readonly reason: string | null;
  readonly scope: string;
  readonly mode: LimitMode;
  readonly limit: number;
  readonly remaining: number;
  readonly retryAfterMs: number;
  readonly resetAfterMs: number;
}

export const QUOTA_EXCEEDED_TYPE = "https://iana.org/assignments/http-problem-types#quota-exceeded";
export const TEMPORARY_REDUCED_CAPACITY_TYPE =
  "https://iana.org/assignments/http-problem-types#temporary-reduced-capacity";

/** The 429 body (RFC 9457 problem details): which limits were exceeded and when to come back. */
export interface QuotaExceededProblem {
  readonly type: typeof QUOTA_EXCEEDED_TYPE;
  readonly title: "Quota exceeded";
  readonly status: 429;
  /** The `RateLimit-Policy` names of every enforced limit that rejected; the binding one among them. */
  readonly "violated-policies": readonly string[];
  readonly code: "RATE_LIMITED";
  /** The binding limit: the one `RateLimit` reports. */
  readonly scope: string;
  readonly retryAfterMs: number;
}

/** The fail-closed 503 body: the limiter could not decide, and this limit does not serve without it. */
export interface LimiterUnavailableProblem {
  readonly type: typeof TEMPORARY_REDUCED_CAPACITY_TYPE;
  readonly title: "Rate limiter unavailable";
  readonly status: 503;
  readonly code: "LIMITER_UNAVAILABLE";
  /** The fail-closed limit that rejected. */
  readonly scope: string;
  readonly retryAfterMs: number;
}

export type RateLimitProblem = QuotaExceededProblem | LimiterUnavailableProblem;

/** The media type of every rejection body. */
export const PROBLEM_CONTENT_TYPE = "application/problem+json";

/** What to put on the response. */
export interface RateLimitHttpResult {
  /**
   * 429 for a quota rejection, 503 for a fail-closed one. Null for an admission: the gateway
   * forwards the request and adds `headers` to whatever the upstream answers.
   */
  readonly status: 429 | 503 | null;
  /** Header names in their canonical spelling, in a stable order. Empty when nothing applies. */
  readonly headers: Readonly<Record<string, string>>;
  /** The problem-details body of a rejection; null for an admission. */
  readonly body: RateLimitProblem | null;
  /** `JSON.stringify(body)`, made as the body is (send it as it is); null for an admission. */
  readonly bodyText: string | null;
  /**
   * On a rejection whose headers were made once for many (`rejection-responses.ts`): `Content-Length`
   * and then `headers`, as Node's flat list of names and values, shared and frozen. Absent
   * otherwise.
   */
  readonly rawHeaders?: readonly string[];
}

/** A limit expressed as a draft-10 quota policy: `q` units per `w` seconds. */
export interface QuotaPolicy {
  /** Whole units of cost (`q`), rounded down so the client is never promised more than exists. */
  readonly quota: number;
  /** Whole seconds (`w`), at least 1, rounded up so `q / w` never exceeds the real rate. */
  readonly windowSec: number;
}

/** Absorbs binary noise such as 3 / 0.1 = 30.000000000000004 before rounding up. */
const ROUNDING_NOISE = 1e-9;

function clampSfInteger(value: number): number {
  return Math.min(SF_INTEGER_MAX, Math.max(0, value));
}

function wholeSecondsUp(seconds: number): number {
  return clampSfInteger(Math.max(1, Math.ceil(seconds - ROUNDING_NOISE)));
}

/**
 * How a limit reads as `q` and `w`. Conservative by construction: a client that sends `q` units
 * per `w` seconds is never rejected for it.
 *
 * - Fixed window, sliding log, sliding window counter: `q` = limit, `w` = the window in seconds,
 *   rounded up for a window that is not a whole number of seconds (§3.1.3 allows no sub-second
 *   window; a 1,500 ms window reads as 2 s, a 100 ms window as 1 s, understating the rate rather
 *   than overstating it).
 * - Token bucket: `q` = capacity (the burst a client may send at once) and `w` = capacity ÷
 *   refillPerSec, the seconds an empty bucket takes to refill, rounded up. So `q / w` is the
 *   sustained rate: capacity 20 at 10/s reads `q=20;w=2`.
 * - Leaky meter (GCRA): the same as a token bucket with burst and drainPerSec.
 */
export function quotaPolicyOf(spec: LimitSpec): QuotaPolicy {
  switch (spec.algorithm) {
    case "fixed-window":
    case "sliding-log":
    case "sliding-window":
      return {
        quota: clampSfInteger(Math.floor(spec.limit)),
        windowSec: wholeSecondsUp(spec.windowMs / 1000),
      };
    case "token-bucket": {
      const quota = clampSfInteger(Math.floor(spec.capacity));
      return { quota, windowSec: wholeSecondsUp(quota / spec.refillPerSec) };
    }
    case "leaky-meter": {
      const quota = clampSfInteger(Math.floor(spec.burst));
      return { quota, windowSec: wholeSecondsUp(quota / spec.drainPerSec) };
    }
    default: {
      const unknown: never = spec;
      throw new TypeError(`unknown limit: ${JSON.stringify(unknown)}`);
    }
  }
}

/** `Retry-After` for a wait: whole seconds, rounded up (1 ms is 1 s; 0 is 0). */
export function retryAfterSeconds(retryAfterMs: number): number {
  return clampSfInteger(Math.ceil(retryAfterMs / 1000));
}

/**
 * The `RateLimit-Policy` value for every enforced check, in the order given; null when no check is
 * enforced (§3: the list is non-empty, so the field is omitted).
 */
export function formatRateLimitPolicy(checks: readonly LimitCheck[]): string | null {
  // The policy's resolutions are frozen and shared by every request of a tier and endpoint class:
  // their field is computed once. Frozen checks in a frozen array cannot change, so the cache
  // cannot go stale.
  // Looked up first: a list cached was frozen then and so still is.
  const cached = policyFieldCache.get(checks);
  if (cached !== undefined) return cached;
  if (!(Object.isFrozen(checks) && checks.every(Object.isFrozen))) {
    return computeRateLimitPolicy(checks);
  }
  const value = computeRateLimitPolicy(checks);
  policyFieldCache.set(checks, value);
  return value;
}

const policyFieldCache = new WeakMap<readonly LimitCheck[], string | null>();

function computeRateLimitPolicy(checks: readonly LimitCheck[]): string | null {
  const items: string[] = [];
  for (const check of checks) {
    if (check.mode !== "enforce") continue;
    const { quota, windowSec } = quotaPolicyOf(check.limit);
    items.push(
      serializeSfString(check.scope) +
        serializeSfIntegerParameters([
          ["q", quota],
          ["w", windowSec],
        ]),
    );
  }
  return items.length === 0 ? null : serializeSfList(items);
}

/** The `RateLimit` value for one outcome: `"<scope>";r=<remaining>;t=<seconds>`. */
export function formatRateLimit(outcome: HttpOutcome, resetSec: number): string {
  // Per response: the quoted scope comes from a cache, and the two parameters, whose keys are
  // constants and whose values are clamped whole numbers, are written directly.
  const remaining = clampSfInteger(Math.floor(outcome.remaining));
  // `resetSec` is the caller's: a fraction fails serialization, as the RFC says it must.
  return `${quotedScopeOf(outcome.scope)};r=${remaining};t=${serializeSfInteger(clampSfInteger(resetSec))}`;
}

/** Serialized scopes. Scopes come from the policy, so few; bounded all the same. */
const quotedScopes = new Map<string, string>();
const MAX_QUOTED_SCOPES = 4_096;

function quotedScopeOf(scope: string): string {
  const cached = quotedScopes.get(scope);
  if (cached !== undefined) return cached;
  const quoted = serializeSfString(scope);
  if (quotedScopes.size < MAX_QUOTED_SCOPES) quotedScopes.set(scope, quoted);
  return quoted;
}

/** The outcome the response reports: the binding one, which the decision names by scope. */
function bindingOutcomeOf(decision: HttpDecision): HttpOutcome | undefined {
  if (decision.scope === null) return undefined;
  return decision.outcomes.find(
    (outcome) => outcome.mode === "enforce" && outcome.scope === decision.scope,
  );
}

/**
 * Everything the response needs for `decision`, made for `checks` (the same checks, which carry
 * the limit parameters `RateLimit-Policy` advertises).
 *
 * - Admission: `RateLimit-Policy` (every enforced limit), then for the binding limit `RateLimit`,
 *   `X-RateLimit-Limit`, `X-RateLimit-Remaining`, `X-RateLimit-Reset` (whole seconds until it is
 *   full again, rounded up). No enforced limit: no headers at all. A binding limit that could not
 *   be measured (a degraded decision that failed open) gets the policy only.
 * - Quota rejection: the same, plus `Retry-After`, `Content-Type: application/problem+json`,
 *   status 429 and the quota-exceeded body.
 * - Fail-closed rejection (binding reason `store-unavailable`): `RateLimit-Policy`,
 *   `Retry-After`, `Content-Type`, status 503 and the temporary-reduced-capacity body.
 *
 * Throws on a rejection without a binding scope, which no decision maker produces, and on a scope
 * outside printable ASCII, which the policy's scope grammar excludes.
 */
export function buildRateLimitResponse(
  decision: HttpDecision,
  checks: readonly LimitCheck[],
): RateLimitHttpResult {
  const headers: Record<string, string> = {};
  const policy = formatRateLimitPolicy(checks);
  if (policy !== null) headers["RateLimit-Policy"] = policy;

  const retryAfterSec = retryAfterSeconds(decision.retryAfterMs);
  if (!decision.allowed && decision.reason === "store-unavailable") {
    if (decision.scope === null) {
      throw new TypeError("a rejection must name the scope of the limit that rejected it");
    }
    headers["Retry-After"] = String(retryAfterSec);
    headers["Content-Type"] = PROBLEM_CONTENT_TYPE;
    const body: LimiterUnavailableProblem = {
      type: TEMPORARY_REDUCED_CAPACITY_TYPE,
      title: "Rate limiter unavailable",
      status: 503,
      code: "LIMITER_UNAVAILABLE",
      scope: decision.scope,
      retryAfterMs: decision.retryAfterMs,
    };
    return { status: 503, headers, body, bodyText: JSON.stringify(body) };
  }

  const binding = bindingOutcomeOf(decision);
  const hasRetryAfter = !decision.allowed && decision.reason !== "cost-exceeds-capacity";
  if (binding !== undefined) {
    const resetSec = retryAfterSeconds(binding.resetAfterMs);
    headers.RateLimit = formatRateLimit(binding, hasRetryAfter ? retryAfterSec : resetSec);
    headers["X-RateLimit-Limit"] = String(clampSfInteger(Math.floor(binding.limit)));
    headers["X-RateLimit-Remaining"] = String(clampSfInteger(Math.floor(binding.remaining)));
    headers["X-RateLimit-Reset"] = String(resetSec);
  }
  if (decision.allowed) return { status: null, headers, body: null, bodyText: null };

  if (decision.scope === null) {
    throw new TypeError("a rejection must name the scope of the limit that rejected it");
  }
  if (hasRetryAfter) headers["Retry-After"] = String(retryAfterSec);
  headers["Content-Type"] = PROBLEM_CONTENT_TYPE;
  const violated = violatedPolicies(decision);
  return {
    status: 429,
    headers,
    body: {
      type: QUOTA_EXCEEDED_TYPE,
      title: "Quota exceeded",
      status: 429,
      "violated-policies": violated,
      code: "RATE_LIMITED",
      scope: decision.scope,
      retryAfterMs: decision.retryAfterMs,
    },
    bodyText: quotaExceededText(violated, decision.scope, decision.retryAfterMs),
  };
}

/**
 * `JSON.stringify` of the 429 body, made from a prefix serialized once per scope (and per list
 * of violated policies when it is more than the scope alone): a rejection flood serializes one
 * number per response instead of the whole object. Member order is the body object's.
 */
function quotaExceededText(
  violated: readonly string[],
  scope: string,
  retryAfterMs: number,
): string {
  const isScopeAlone = violated.length === 1 && violated[0] === scope;
  let prefix = isScopeAlone ? quotaPrefixes.get(scope) : undefined;
  if (prefix === undefined) {
    prefix = `{"type":${JSON.stringify(QUOTA_EXCEEDED_TYPE)},"title":"Quota exceeded","status":429,"violated-policies":${JSON.stringify(violated)},"code":"RATE_LIMITED","scope":${JSON.stringify(scope)},"retryAfterMs":`;
    if (isScopeAlone && quotaPrefixes.size < MAX_QUOTED_SCOPES) quotaPrefixes.set(scope, prefix);
  }
  return `${prefix}${JSON.stringify(retryAfterMs)}}`;
}

/** The 429 body's text up to `retryAfterMs`, by scope, for rejections that violated it alone. */
const quotaPrefixes = new Map<string, string>();

/**
 * The names of the enforced limits that rejected, in check order, the binding one always among
 * them (a decision whose outcomes were not kept still names its binding limit). A limit that
 * rejected only because the store was down exceeded nothing and is left out.
 */
function violatedPolicies(decision: HttpDecision): string[] {
  const names: string[] = [];
  for (const outcome of decision.outcomes) {
    if (outcome.mode !== "enforce" || outcome.allowed || outcome.reason === "store-unavailable") {
      continue;
    }
    if (!names.includes(outcome.scope)) names.push(outcome.scope);
  }
  if (decision.scope !== null && !names.includes(decision.scope)) names.unshift(decision.scope);
  return names;
}
