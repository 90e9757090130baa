/**
 * The HTTP contract as a test reads it: every rate-limit field parsed with a real RFC 9651 parser
 * (`structured-headers`), every problem-details member checked, and every name that a response
 * uses (`violated-policies`, `RateLimit`, the body's `scope`) looked up in its `RateLimit-Policy`.
 * Throws an Error naming the field and what is wrong; returns what it parsed.
 *
 * Works on any response shape: pass a header getter (`(name) => response.headers.get(name)`).
 */
import { parseItem, parseList, Token } from "structured-headers";

/** One `RateLimit-Policy` item. */
export interface ParsedQuotaPolicy {
  readonly quota: number;
  readonly windowSec: number;
}

/** The one `RateLimit` item. */
export interface ParsedRateLimit {
  readonly name: string;
  readonly remaining: number;
  readonly resetSec: number;
}

export interface ParsedRateLimitContract {
  readonly status: number;
  /** `RateLimit-Policy` by name, in field order; empty when the field is absent. */
  readonly policies: ReadonlyMap<string, ParsedQuotaPolicy>;
  readonly rateLimit: ParsedRateLimit | null;
  readonly retryAfterSec: number | null;
  /** The parsed problem body of a 429 or 503; null otherwise. */
  readonly problem: Readonly<Record<string, unknown>> | null;
}

export interface ContractResponse {
  readonly status: number;
  readonly header: (name: string) => string | null | undefined;
  /** The body text (rejections are checked; other bodies are ignored). */
  readonly bodyText: string;
}

const QUOTA_EXCEEDED = "https://iana.org/assignments/http-problem-types#quota-exceeded";
const REDUCED_CAPACITY =
  "https://iana.org/assignments/http-problem-types#temporary-reduced-capacity";

function fail(message: string): never {
  throw new Error(`HTTP contract: ${message}`);
}

function nonNegativeInteger(value: unknown, where: string): number {
  if (typeof value !== "number" || !Number.isInteger(value) || value < 0) {
    fail(`${where} must be a non-negative Integer, got ${String(value)}`);
  }
  return value;
}

function parsedField<T>(name: string, raw: string, parse: (input: string) => T): T {
  try {
    return parse(raw);
  } catch (error) {
    fail(`${name} ${JSON.stringify(raw)} is not a valid structured field: ${String(error)}`);
  }
}

function parsePolicies(raw: string | null | undefined): Map<string, ParsedQuotaPolicy> {
  const policies = new Map<string, ParsedQuotaPolicy>();
  if (raw === null || raw === undefined) return policies;
  const list = parsedField("RateLimit-Policy", raw, parseList);
  if (list.length === 0) fail("RateLimit-Policy must be a non-empty List");
  for (const [value, parameters] of list) {
    if (typeof value !== "string") fail("each RateLimit-Policy item must be a String");
    if (policies.has(value)) fail(`RateLimit-Policy names ${JSON.stringify(value)} twice`);
    for (const key of parameters.keys()) {
      if (key !== "q" && key !== "w") fail(`RateLimit-Policy item ${value} has parameter ${key}`);
    }
    const quota = nonNegativeInteger(parameters.get("q"), `RateLimit-Policy ${value} q`);
    const windowSec = nonNegativeInteger(parameters.get("w"), `RateLimit-Policy ${value} w`);
    if (windowSec === 0) fail(`RateLimit-Policy ${value} w must be non-zero`);
    policies.set(value, { quota, windowSec });
  }
  return policies;
}

function parseRateLimit(
  raw: string | null | undefined,
  policies: ReadonlyMap<string, ParsedQuotaPolicy>,
): ParsedRateLimit | null {
  if (raw === null || raw === undefined) return null;
  const list = parsedField("RateLimit", raw, parseList);
  if (list.length !== 1) fail(`RateLimit must report one limit, got ${list.length}`);
  const [value, parameters] = list[0] as [unknown, Map<string, unknown>];
  if (typeof value !== "string") fail("the RateLimit item must be a String");
  if (!policies.has(value)) fail(`RateLimit names ${value}, which RateLimit-Policy does not`);
  for (const key of parameters.keys()) {
    if (key !== "r" && key !== "t") fail(`RateLimit has parameter ${key}`);
  }
  return {
    name: value,
    remaining: nonNegativeInteger(parameters.get("r"), "RateLimit r"),
    resetSec: nonNegativeInteger(parameters.get("t"), "RateLimit t"),
  };
}

function integerItem(name: string, raw: string | null | undefined): number | null {
  if (raw === null || raw === undefined) return null;
  const [value, parameters] = parsedField(name, raw, parseItem);
  if (parameters.size !== 0) fail(`${name} has parameters`);
  if (value instanceof Token) fail(`${name} must be an Integer, got a Token`);
  return nonNegativeInteger(value, name);
}

function exactMembers(body: Record<string, unknown>, members: readonly string[]): void {
  const keys = Object.keys(body).sort();
  const expected = [...members].sort();
  if (keys.join(",") !== expected.join(",")) {
    fail(`the problem body has members [${keys.join(", ")}], expected [${expected.join(", ")}]`);
  }
}

function problemOf(response: ContractResponse): Record<string, unknown> {
  const contentType = response.header("content-type");
  if (contentType?.split(";")[0]?.trim().toLowerCase() !== "application/problem+json") {
    fail(`a ${response.status} must be application/problem+json, got ${String(contentType)}`);
  }
  let body: unknown;
  try {
    body = JSON.parse(response.bodyText);
  } catch {
    fail(`the ${response.status} body is not JSON: ${response.bodyText.slice(0, 200)}`);
  }
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    fail("the problem body must be a JSON object");
  }
  const problem = body as Record<string, unknown>;
  if (problem.status !== response.status) {
    fail(`the body's status ${String(problem.status)} is not the response's ${response.status}`);
  }
  if (typeof problem.title !== "string" || problem.title === "") fail("title must be a string");
  if (typeof problem.scope !== "string") fail("scope must be a string");
  nonNegativeInteger(problem.retryAfterMs, "retryAfterMs");
  return problem;
}

/** Checks one response against the contract; see the module comment. */
export function checkRateLimitContract(response: ContractResponse): ParsedRateLimitContract {
  const policies = parsePolicies(response.header("ratelimit-policy"));
  const rateLimit = parseRateLimit(response.header("ratelimit"), policies);
  const retryAfterSec = integerItem("Retry-After", response.header("retry-after"));
  const xLimit = integerItem("X-RateLimit-Limit", response.header("x-ratelimit-limit"));
  const xRemaining = integerItem("X-RateLimit-Remaining", response.header("x-ratelimit-remaining"));
  const xReset = integerItem("X-RateLimit-Reset", response.header("x-ratelimit-reset"));
  if ((rateLimit === null) !== (xLimit === null || xRemaining === null || xReset === null)) {
    fail("RateLimit and X-RateLimit-Limit/-Remaining/-Reset come together or not at all");
  }
  if (rateLimit !== null && xRemaining !== rateLimit.remaining) {
    fail(`X-RateLimit-Remaining ${xRemaining} is not RateLimit's r=${rateLimit.remaining}`);
  }

  let problem: Record<string, unknown> | null = null;
  if (response.status === 429) {
    problem = problemOf(response);
    exactMembers(problem, [
      "type",
      "title",
      "status",
      "violated-policies",
      "code",
      "scope",
      "retryAfterMs",
    ]);
    if (problem.type !== QUOTA_EXCEEDED) fail(`a 429's type must be ${QUOTA_EXCEEDED}`);
    if (problem.code !== "RATE_LIMITED") fail("a 429's code must be RATE_LIMITED");
    const violated = problem["violated-policies"];
    if (!Array.isArray(violated) || violated.length === 0) {
      fail("violated-policies must be a non-empty array of strings");
    }
    for (const name of violated) {
      if (typeof name !== "string") fail("violated-policies must hold strings only");
      if (!policies.has(name)) {
        fail(`violated-policies names ${name}, which RateLimit-Policy does not`);
      }
    }
    if (!violated.includes(problem.scope)) fail("violated-policies must include the scope");
    if (rateLimit === null) fail("a 429 must carry RateLimit");
    if (rateLimit.name !== problem.scope) fail("RateLimit must report the body's scope");
    if (retryAfterSec !== null && rateLimit.resetSec !== retryAfterSec) {
      fail(`RateLimit t=${rateLimit.resetSec} must equal Retry-After ${retryAfterSec}`);
    }
  } else if (response.status === 503) {
    problem = problemOf(response);
    exactMembers(problem, ["type", "title", "status", "code", "scope", "retryAfterMs"]);
    if (problem.type !== REDUCED_CAPACITY) fail(`a 503's type must be ${REDUCED_CAPACITY}`);
    if (problem.code !== "LIMITER_UNAVAILABLE") fail("a 503's code must be LIMITER_UNAVAILABLE");
    if (retryAfterSec === null) fail("a 503 must carry Retry-After");
    if (rateLimit !== null) fail("a 503 measured nothing, so it carries no RateLimit");
    if (policies.size > 0 && !policies.has(problem.scope as string)) {
      fail(`the 503's scope ${String(problem.scope)} is not in RateLimit-Policy`);
    }
  } else if (rateLimit === null && retryAfterSec !== null) {
    fail(`a ${response.status} carries Retry-After without RateLimit`);
  }
  return { status: response.status, policies, rateLimit, retryAfterSec, problem };
}

/** {@link checkRateLimitContract} for a Fetch `Response` (reads, and so consumes, its body). */
export async function checkFetchResponseContract(
  response: Response,
): Promise<ParsedRateLimitContract> {
  const bodyText = await response.text();
  return checkRateLimitContract({
    status: response.status,
    header: (name) => response.headers.get(name),
    bodyText,
  });
}
