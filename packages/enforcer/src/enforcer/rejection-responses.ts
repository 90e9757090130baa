/**
 * 429 responses made once and reused: in a flood of rejections, the same limit rejects the same
 * clients again and again with the same headers, and only the body's `retryAfterMs` changes from
 * one millisecond to the next. So the parts of a 429 that do not depend on the millisecond (the
 * status, the header record, Node's raw header list with its `Content-Length`, and the body's text
 * up to `retryAfterMs`) are kept per list of checks (the limits `RateLimit-Policy` names) and per
 * retry-after second, and each rejection adds its own number to the body.
 *
 * Byte for byte what {@link buildRateLimitResponse} makes: an entry is made FROM its result the
 * first time, and found again only for a decision that would give the same bytes (the same binding
 * limit, scope alone among the violated policies, remaining, reset and retry-after seconds, and the
 * same number of digits in `retryAfterMs`). Anything else (an admission, a 503, several limits
 * violated at once, a fractional wait, a list of checks that is not frozen) is built fresh.
 *
 * Bounded: at most `maxPerLimit` entries per list of checks (then that list's entries are dropped
 * and made again), and at most {@link MAX_LIMITS} lists. The engine clears it whenever the policy
 * in force changes, so no entry outlives the limits it was made for.
 */

import type { LimitCheck } from "../limiter/types";
import {
  buildRateLimitResponse,
  type HttpDecision,
  type HttpOutcome,
  QUOTA_EXCEEDED_TYPE,
  type RateLimitHttpResult,
  retryAfterSeconds,
} from "./http-headers";

/**
 * What a caller writes of a kept 429: its headers, and its body up to `retryAfterMs`'s value
 * (the whole body: {@link keptBodyText}).
 */
export interface KeptRejection {
  readonly headers: Readonly<Record<string, string>>;
  /** Node's flat list of names and values, `Content-Length` first. */
  readonly rawHeaders: readonly string[];
  /** The body's text up to the value of `retryAfterMs`. */
  readonly bodyPrefix: string;
  /**
   * `bodyPrefix` and the thousands of `retryAfterMs` (`headThousands`) most rejections filed
   * under this entry's second have: the entry for second s holds waits of (s-1)*1000+1 to s*1000
   * milliseconds, all but the last of which have s-1 thousands.
   */
  readonly bodyHead: string;
  readonly headThousands: number;
  /** The body's `violated-policies`: the scope alone, frozen. */
  readonly violated: readonly string[];
}

/** The parts of a 429 that one limit gives every rejection in the same retry-after second. */
interface PrebuiltRejection extends KeptRejection {
  // What the entry was made for (its retry-after second is the key it is filed under).
  readonly scope: string;
  readonly limit: number;
  readonly remaining: number;
  readonly resetSec: number;
  readonly hasRetryAfter: boolean;
  readonly retryAfterDigits: number;
}

/** The entries of one list of checks, by retry-after second. */
interface LimitResponses {
  readonly bySecond: Map<number, PrebuiltRejection[]>;
  count: number;
}

/** Scopes are printable ASCII (the policy's grammar); a body outside it is not kept. */
const ASCII = /^[\x20-\x7e]*$/;

/** Lists of checks held at most (the policy's tiers times endpoint classes, and overrides). */
export const MAX_LIMITS = 4_096;

export interface RejectionResponsesOptions {
  /**
   * Entries held per list of checks: one per retry-after second (and, rarely, per remaining or
   * reset second) seen while its rejections last.
   * @default 512
   */
  readonly maxPerLimit?: number;
}

export class RejectionResponses {
  readonly #byChecks = new Map<readonly LimitCheck[], LimitResponses>();
  readonly #maxPerLimit: number;

  constructor(options: RejectionResponsesOptions = {}) {
    const maxPerLimit = options.maxPerLimit ?? 512;
    if (!Number.isInteger(maxPerLimit) || maxPerLimit < 1) {
      throw new RangeError(`maxPerLimit must be a whole number >= 1, got ${maxPerLimit}`);
    }
    this.#maxPerLimit = maxPerLimit;
  }

  /** Entries held, over every list of checks. */
  get size(): number {
    let size = 0;
    for (const responses of this.#byChecks.values()) size += responses.count;
    return size;
  }

  /** Forgets every entry (the policy changed). */
  clear(): void {
    this.#byChecks.clear();
  }

  /**
   * `buildRateLimitResponse(decision, checks)`, with `rawHeaders` (Node's flat list, with
   * `Content-Length` first) on a 429 made from a kept entry.
   */
  responseFor(decision: HttpDecision, checks: readonly LimitCheck[]): RateLimitHttpResult {
    const { scope, retryAfterMs } = decision;
    if (
      decision.allowed ||
      scope === null ||
      decision.reason === "store-unavailable" ||
      !Number.isInteger(retryAfterMs) ||
      retryAfterMs < 0
    ) {
      return buildRateLimitResponse(decision, checks);
    }
    const binding = bindingOutcomeOf(decision.outcomes, scope);
    if (binding === undefined || !isScopeAloneViolated(decision.outcomes, scope)) {
      return buildRateLimitResponse(decision, checks);
    }
    const resetSec = retryAfterSeconds(binding.resetAfterMs);
    const hasRetryAfter = decision.reason !== "cost-exceeds-capacity";
    const found = this.keptFor(
      checks,
      scope,
      binding.limit,
      binding.remaining,
      retryAfterMs,
      resetSec,
      hasRetryAfter,
      decimalDigitsOf(retryAfterMs),
    );
    if (found !== undefined) {
      return {
        status: 429,
        headers: found.headers,
        body: {
          type: QUOTA_EXCEEDED_TYPE,
          title: "Quota exceeded",
          status: 429,
          "violated-policies": found.violated,
          code: "RATE_LIMITED",
          scope,
          retryAfterMs,
        },
        bodyText: keptBodyText(found, retryAfterMs),
        rawHeaders: found.rawHeaders,
      };
    }
    const responses = this.#byChecks.get(checks);
    const retrySec = retryAfterSeconds(retryAfterMs);
    const fresh = buildRateLimitResponse(decision, checks);
    const retryAfterText = String(retryAfterMs);
    const tail = `${retryAfterText}}`;
    const bodyText = fresh.bodyText;
    if (
      fresh.status !== 429 ||
      bodyText === null ||
      !bodyText.endsWith(tail) ||
      !ASCII.test(bodyText)
    ) {
      return fresh;
    }
    const kept = responses ?? this.#listFor(checks);
    if (kept === undefined) return fresh;
    const headers = Object.freeze({ ...fresh.headers });
    const bodyPrefix = bodyText.slice(0, bodyText.length - tail.length);
    // ASCII: one byte a character, in any runtime (no `Buffer` needed).
    const rawHeaders: string[] = ["Content-Length", String(bodyText.length)];
    for (const name in headers) rawHeaders.push(name, headers[name] as string);
    const entry: PrebuiltRejection = {
      scope,
      limit: binding.limit,
      remaining: binding.remaining,
      resetSec,
      hasRetryAfter,
      retryAfterDigits: retryAfterText.length,
      headers,
      bodyHead: retrySec > 1 ? `${bodyPrefix}${retrySec - 1}` : bodyPrefix,
      headThousands: retrySec - 1,
      rawHeaders: Object.freeze(rawHeaders),
      violated: Object.freeze([scope]),
      bodyPrefix,
    };
    if (kept.count >= this.#maxPerLimit) {
      kept.bySecond.clear();
      kept.count = 0;
    }
    const filed = kept.bySecond.get(retrySec);
    if (filed === undefined) kept.bySecond.set(retrySec, [entry]);
    else filed.push(entry);
    kept.count++;
    return { ...fresh, headers, rawHeaders: entry.rawHeaders };
  }

  /**
   * The kept 429 for a rejection by `scope` alone, when one was made for the same bytes: the
   * same list of checks, limit, remaining, reset and retry-after seconds, and the same number of
   * digits in `retryAfterMs` (`decimalDigitsOf`; {@link keptBodyText} makes the body). Undefined when none is kept yet: {@link responseFor} makes and keeps it.
   */
  keptFor(
    checks: readonly LimitCheck[],
    scope: string,
    limit: number,
    remaining: number,
    retryAfterMs: number,
    resetSec: number,
    hasRetryAfter: boolean,
    retryAfterDigits: number,
  ): KeptRejection | undefined {
    const entries = this.#byChecks.get(checks)?.bySecond.get(retryAfterSeconds(retryAfterMs));
    if (entries === undefined) return undefined;
    for (let index = 0; index < entries.length; index++) {
      const entry = entries[index] as PrebuiltRejection;
      if (
        entry.scope === scope &&
        entry.resetSec === resetSec &&
        entry.remaining === remaining &&
        entry.limit === limit &&
        entry.hasRetryAfter === hasRetryAfter &&
        entry.retryAfterDigits === retryAfterDigits
      ) {
        return entry;
      }
    }
    return undefined;
  }

  /**
   * A new list's entries, or undefined when they may not be kept: checks that could change
   * (not frozen) or too many lists already.
   */
  #listFor(checks: readonly LimitCheck[]): LimitResponses | undefined {
    if (this.#byChecks.size >= MAX_LIMITS) return undefined;
    if (!(Object.isFrozen(checks) && checks.every(Object.isFrozen))) return undefined;
    const responses: LimitResponses = { bySecond: new Map(), count: 0 };
    this.#byChecks.set(checks, responses);
    return responses;
  }
}

/**
 * A body's last characters, `<n>}` for a wait of n < 1000 ms and `<nnn>}` (n zero-padded to three
 * digits) for the milliseconds past a wait's whole thousands, each made the first time it is
 * needed and kept (2,000 short strings at most, shared by every enforcer in the process).
 */
const shortTails = new Array<string | undefined>(1_000);
const paddedTails = new Array<string | undefined>(1_000);

function tailOf(tails: (string | undefined)[], n: number, digits: number): string {
  let tail = tails[n];
  if (tail === undefined) {
    tail = `${String(n).padStart(digits, "0")}}`;
    tails[n] = tail;
  }
  return tail;
}

/** Waits up to this long are spelled in plain digits by `String` (below 1e21) and exact. */
const MAX_TABLED_MS = Number.MAX_SAFE_INTEGER;

/**
 * The body of the kept 429 `kept` for a wait of `retryAfterMs` (a whole number >= 0 of the
 * entry's second): byte for byte `${kept.bodyPrefix}${retryAfterMs}}`, but made as ONE new string
 * (the kept head joined to a kept tail) instead of the number's digits and two joins. Rejections
 * flood in; this is the only string each one makes.
 */
export function keptBodyText(kept: KeptRejection, retryAfterMs: number): string {
  if (retryAfterMs < 1_000) return kept.bodyPrefix + tailOf(shortTails, retryAfterMs, 1);
  if (retryAfterMs > MAX_TABLED_MS) return `${kept.bodyPrefix}${retryAfterMs}}`;
  const thousands = Math.floor(retryAfterMs / 1_000);
  const tail = tailOf(paddedTails, retryAfterMs - thousands * 1_000, 3);
  // The last millisecond of a second has one more thousand than its entry's head (rare).
  return thousands === kept.headThousands
    ? kept.bodyHead + tail
    : `${kept.bodyPrefix}${thousands}${tail}`;
}

/**
 * `String(n).length` for a whole number `n` >= 0, counted without writing the digits below 1e21
 * (writing them would make a string per rejection; from 1e21 on `String` writes an exponent).
 */
export function decimalDigitsOf(n: number): number {
  if (n >= 1e21) return String(n).length;
  let digits = 1;
  for (let bound = 10; n >= bound; bound *= 10) digits++;
  return digits;
}

/** The enforced outcome of the binding scope, as `buildRateLimitResponse` reports it. */
function bindingOutcomeOf(
  outcomes: readonly HttpOutcome[],
  scope: string,
): HttpOutcome | undefined {
  for (let index = 0; index < outcomes.length; index++) {
    const outcome = outcomes[index] as HttpOutcome;
    if (outcome.mode === "enforce" && outcome.scope === scope) return outcome;
  }
  return undefined;
}

/**
 * Whether the binding scope is the only violated policy (the body's `violated-policies` is
 * `[scope]`), by the rule of `buildRateLimitResponse`: enforced, rejected, not for the store.
 */
function isScopeAloneViolated(outcomes: readonly HttpOutcome[], scope: string): boolean {
  for (let index = 0; index < outcomes.length; index++) {
    const outcome = outcomes[index] as HttpOutcome;
    if (outcome.mode !== "enforce" || outcome.allowed || outcome.reason === "store-unavailable") {
      continue;
    }
    if (outcome.scope !== scope) return false;
  }
  return true;
}
