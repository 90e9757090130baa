/**
 * The forward-auth contract: what Traefik (ForwardAuth), Caddy (`forward_auth`) and nginx
 * (`auth_request`, with the configuration in docs/ratelimit-service.md) send about the original
 * request, read into an enforcer request; and the answer they pass on.
 *
 * - Method: `X-Forwarded-Method` (Traefik, Caddy) or `X-Original-Method` (nginx).
 * - Path: `X-Forwarded-Uri` (Traefik, Caddy) or `X-Original-URI` (nginx).
 * - Client address: `X-Real-IP` (nginx), else the right-most `X-Forwarded-For` entry: the one
 *   the gateway itself appended, since entries to its left came from the client.
 * - Customer and tier: headers the gateway passes on (`X-Customer-Id`, `X-Tier` by default). Put
 *   the check after your authentication, which sets them: a client can send any header.
 *
 * Answers: 200 with the rate-limit headers, or 429 with `Retry-After`, the headers and the problem
 * body, which Traefik and Caddy pass to the client as they are. nginx's `auth_request` passes only
 * 2xx, 401 and 403, so a request carrying `X-Limitplane-Deny-Status: 403` is refused with 403 and
 * the same headers, plus `Limitplane-Problem` holding the body for nginx to send with its 429.
 */
import type { EnforcerRequest, EnforcerResult } from "@limitplane/enforcer";
import { isCustomerId, MAX_COST, normalizeClientAddress } from "@limitplane/enforcer/policy";

export interface ForwardAuthOptions {
  /** @default "x-customer-id" */
  readonly customerHeader: string;
  /** @default "x-tier" */
  readonly tierHeader: string;
}

export const DEFAULT_FORWARD_AUTH_OPTIONS: ForwardAuthOptions = {
  customerHeader: "x-customer-id",
  tierHeader: "x-tier",
};

/** The header asking for nginx's 403 in place of 429. */
export const DENY_STATUS_HEADER = "x-limitplane-deny-status";
/** Where the 403 answer carries the problem body, for nginx to send. */
export const PROBLEM_HEADER = "Limitplane-Problem";
/** The header carrying a cost other than the endpoint class's. */
export const COST_HEADER = "x-limitplane-cost";

type Headers = Readonly<Record<string, string | string[] | undefined>>;

function single(headers: Headers, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[value.length - 1] : value;
}

export type ForwardAuthRequest =
  | { readonly ok: true; readonly request: EnforcerRequest; readonly denyStatus: 403 | 429 }
  | { readonly ok: false; readonly field: string; readonly message: string };

/** The enforcer request a forward-auth call describes, or the header at fault. */
export function forwardAuthRequestOf(
  headers: Headers,
  socketAddress: string | undefined,
  options: ForwardAuthOptions,
): ForwardAuthRequest {
  const method = single(headers, "x-forwarded-method") ?? single(headers, "x-original-method");
  if (method === undefined || !/^[A-Za-z]{1,16}$/.test(method)) {
    return {
      ok: false,
      field: "x-forwarded-method",
      message: "send the original method in X-Forwarded-Method or X-Original-Method",
    };
  }
  const uri = single(headers, "x-forwarded-uri") ?? single(headers, "x-original-uri");
  if (uri === undefined || !uri.startsWith("/") || uri.length > 8_192) {
    return {
      ok: false,
      field: "x-forwarded-uri",
      message:
        "send the original path (starting with /, at most 8192 characters) in X-Forwarded-Uri or X-Original-URI",
    };
  }
  const realIp = single(headers, "x-real-ip");
  const forwardedFor = single(headers, "x-forwarded-for")?.split(",").at(-1);
  const rawAddress = realIp ?? forwardedFor ?? socketAddress;
  const clientAddress = rawAddress === undefined ? null : normalizeClientAddress(rawAddress);
  if (rawAddress !== undefined && clientAddress === null) {
    return {
      ok: false,
      field: realIp === undefined ? "x-forwarded-for" : "x-real-ip",
      message: "is not an IP address",
    };
  }
  const customerId = single(headers, options.customerHeader) ?? null;
  if (customerId !== null && !isCustomerId(customerId)) {
    return {
      ok: false,
      field: options.customerHeader,
      message: "is not a customer id (letters, digits and ._:@-, at most 128)",
    };
  }
  const costText = single(headers, COST_HEADER);
  const cost = costText === undefined ? undefined : Number(costText);
  if (cost !== undefined && !(/^\d+(\.\d+)?$/.test(costText ?? "") && cost <= MAX_COST)) {
    return { ok: false, field: COST_HEADER, message: `must be a number from 0 to ${MAX_COST}` };
  }
  const denyText = single(headers, DENY_STATUS_HEADER);
  if (denyText !== undefined && denyText !== "403" && denyText !== "429") {
    return { ok: false, field: DENY_STATUS_HEADER, message: "must be 403 or 429" };
  }
  const request: {
    customerId: string | null;
    tier: string | null;
    method: string;
    path: string;
    clientAddress: string | null;
    cost?: number;
  } = {
    customerId,
    tier: single(headers, options.tierHeader) ?? null,
    method: method.toUpperCase(),
    path: uri,
    clientAddress,
  };
  if (cost !== undefined) request.cost = cost;
  return { ok: true, request, denyStatus: denyText === "403" ? 403 : 429 };
}

/** The HTTP answer for a decision. */
export interface ForwardAuthAnswer {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
}

/** 200 with the headers; or the rejection as 429 (503 fail-closed), or 403 for nginx. */
export function forwardAuthAnswerOf(
  result: EnforcerResult,
  denyStatus: 403 | 429,
): ForwardAuthAnswer {
  const { http } = result;
  if (http.status === null) return { status: 200, headers: http.headers, body: "" };
  const body = http.bodyText ?? "";
  // A fail-closed 503 stays a 503, which nginx turns into a 500: it is not a quota rejection.
  if (denyStatus === 403 && http.status === 429) {
    return { status: 403, headers: { ...http.headers, [PROBLEM_HEADER]: body }, body };
  }
  return { status: http.status, headers: http.headers, body };
}
