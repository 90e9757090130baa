/**
 * One definition per API endpoint: method, path, permission, input and output schemas, and the
 * service call. The same definition produces the Next.js route handler (`toRouteHandler`) and the
 * OpenAPI document (`lib/api/openapi.ts`), so the documentation cannot drift from the behaviour.
 *
 * A handler stays thin: the wrapper authenticates, checks cross-site requests and the permission,
 * parses params, query and body (strict schemas: unknown fields are refused), then the endpoint
 * calls one service and returns its result, which is parsed through the output schema so no column
 * leaks. Every failure leaves as JSON `{ error: { code, message, fieldErrors, details, requestId } }`.
 */
import { randomUUID } from "node:crypto";
import { fieldErrorsFromZod } from "@limitplane/enforcer/policy";
import type { z } from "zod";
import type { Principal } from "@/lib/control/auth/principal";
import type { Permission } from "@/lib/control/auth/roles";
import { can } from "@/lib/control/auth/roles";
import {
  AppError,
  type ErrorCode,
  isAppError,
  toFieldErrors,
  validationError,
} from "@/lib/control/errors";
import { isCrossSiteBrowserRequest, isSafeMethod, isSameOriginRequest } from "./cross-site";
import { readJson } from "./read-json";

export type HttpMethod = "GET" | "POST" | "PUT" | "PATCH" | "DELETE";

export type { Principal };

/**
 * Who may call an endpoint:
 * - `public`: anyone, no credential needed;
 * - `authenticated`: any principal, session or API token;
 * - `session`: a signed-in operator's session (its own sessions, its password, sign-out); an API
 *   token is refused with FORBIDDEN;
 * - a permission (roles.ts): any principal whose role has it.
 */
export type EndpointAccess = "public" | "authenticated" | "session" | Permission;

/** How the API learns who is calling; installed once by the app (`setAuthenticator`). */
export interface Authenticator {
  /** The principal for this request, or null when it carries no valid credential. */
  authenticate(request: Request): Promise<Principal | null>;
}

let authenticator: Authenticator | null = null;

export function setAuthenticator(value: Authenticator): void {
  authenticator = value;
}

export interface EndpointInput<Params, Query, Body> {
  params: Params;
  query: Query;
  body: Body;
  /** Null only for `access: "public"` endpoints. */
  principal: Principal | null;
  request: Request;
  requestId: string;
}

/**
 * `Result` is what the response schema describes; `Raw`, what `handle` returns, may carry more
 * (a new session's token, for the Set-Cookie header): the schema strips it before anything is
 * sent.
 */
export interface EndpointSpec<Params, Query, Body, Result, Raw extends Result = Result> {
  method: HttpMethod;
  /** OpenAPI-style path: `/api/v1/tiers/{name}`. */
  path: string;
  summary: string;
  description?: string;
  tag: string;
  access: EndpointAccess;
  /**
   * For public endpoints that start a session (sign-in): refuse a browser's cross-site request,
   * so another site cannot sign a visitor in to an account of its choosing. Clients that send
   * neither `Origin` nor `Sec-Fetch-Site` (curl, scripts) pass.
   */
  refuseCrossSite?: boolean;
  params?: z.ZodType<Params>;
  query?: z.ZodType<Query>;
  body?: z.ZodType<Body>;
  /** Largest body accepted. @default 1 MiB */
  maxBodyBytes?: number;
  response: z.ZodType<Result>;
  /** @default 200 (201 for POST that creates, set explicitly) */
  successStatus?: 200 | 201 | 204;
  /** Failure codes this endpoint documents beyond the common ones. */
  errors?: readonly ErrorCode[];
  handle(input: EndpointInput<Params, Query, Body>): Promise<Raw>;
  /** Extra response headers computed from the result (e.g. a Set-Cookie). */
  headers?(result: Raw, input: EndpointInput<Params, Query, Body>): HeadersInit;
  /**
   * The body as sent, instead of the result as JSON: for a document whose exact bytes matter (the
   * canonical policy export). The result is still checked against `response` first.
   */
  render?(result: Result): { readonly body: string; readonly contentType: string };
  /**
   * What the OpenAPI document shows where it differs from what is validated here: a body the
   * service validates itself (a whole policy, reported by position), or a rendered response.
   */
  docs?: { readonly body?: z.ZodType; readonly response?: z.ZodType };
}

// biome-ignore lint/suspicious/noExplicitAny: a registry of endpoints of every shape.
export type AnyEndpoint = EndpointSpec<any, any, any, any, any>;

export function defineEndpoint<
  Params = undefined,
  Query = undefined,
  Body = undefined,
  Result = unknown,
  Raw extends Result = Result,
>(
  spec: EndpointSpec<Params, Query, Body, Result, Raw>,
): EndpointSpec<Params, Query, Body, Result, Raw> {
  return spec;
}

const REQUEST_ID = /^[A-Za-z0-9._-]{8,64}$/;

/** The caller's request id when it is sane, else a new one; echoed in every response. */
export function requestIdOf(request: Request): string {
  const given = request.headers.get("x-request-id");
  return given !== null && REQUEST_ID.test(given) ? given : randomUUID();
}

function parseWith<T>(schema: z.ZodType<T> | undefined, value: unknown, where: string): T {
  if (schema === undefined) return undefined as T;
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  throw validationError(
    toFieldErrors(fieldErrorsFromZod(result.error), where === "body" ? [] : [where]),
  );
}

function queryObject(request: Request): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [key, value] of new URL(request.url).searchParams) {
    const previous = out[key];
    if (previous === undefined) out[key] = value;
    else out[key] = Array.isArray(previous) ? [...previous, value] : [previous, value];
  }
  return out;
}

export function errorResponse(error: unknown, requestId: string): Response {
  if (!isAppError(error)) {
    // A bug, not the caller's mistake: log the cause once, here, and say nothing about it.
    console.error(`[${requestId}] unhandled error`, error);
    error = new AppError(
      "INTERNAL",
      "Something went wrong on our side. Quote the request id if you report it.",
    );
  }
  const appError = error as AppError;
  const headers = new Headers({ "x-request-id": requestId, "cache-control": "no-store" });
  if (appError.retryAfterSec !== undefined)
    headers.set("retry-after", String(appError.retryAfterSec));
  if (appError.code === "UNAUTHENTICATED")
    headers.set("www-authenticate", 'Bearer realm="limitplane"');
  return Response.json(
    {
      error: {
        code: appError.code,
        message: appError.message,
        fieldErrors: appError.fieldErrors,
        ...(appError.details ? { details: appError.details } : {}),
        requestId,
      },
    },
    { status: appError.status, headers },
  );
}

/** The principal of a non-public endpoint's input (the wrapper has authenticated it). */
export function principalOf(input: { readonly principal: Principal | null }): Principal {
  if (input.principal === null) throw new Error("principalOf called on a public endpoint");
  return input.principal;
}

async function authorize(spec: AnyEndpoint, request: Request): Promise<Principal | null> {
  if (spec.access === "public") {
    if (spec.refuseCrossSite === true && isCrossSiteBrowserRequest(request)) {
      throw new AppError(
        "CROSS_SITE_REQUEST",
        "This request came from another site and was refused. Sign in from the console.",
      );
    }
    return null;
  }
  if (authenticator === null)
    throw new Error("no authenticator installed: call setAuthenticator first");
  const principal = await authenticator.authenticate(request);
  if (principal === null) {
    throw new AppError(
      "UNAUTHENTICATED",
      "Sign in, or send an API token as `Authorization: Bearer <token>`.",
    );
  }
  if (
    principal.kind === "operator" &&
    !isSafeMethod(request.method) &&
    !isSameOriginRequest(request)
  ) {
    throw new AppError(
      "CROSS_SITE_REQUEST",
      "This request came from another site and was refused. Use the console, or an API token.",
    );
  }
  if (spec.access === "session") {
    if (principal.kind !== "operator") {
      throw new AppError(
        "FORBIDDEN",
        "This concerns a signed-in operator's own session; an API token has none.",
        { details: { requires: "session" } },
      );
    }
    return principal;
  }
  if (spec.access !== "authenticated" && !can(principal.role, spec.access)) {
    throw new AppError(
      "FORBIDDEN",
      `Your role (${principal.role}) may not do this; it needs ${spec.access}.`,
      {
        details: { permission: spec.access, role: principal.role },
      },
    );
  }
  return principal;
}

type RouteContext = { params: Promise<Record<string, string | string[] | undefined>> };

/** The Next.js route handler for `spec`. */
export function toRouteHandler(
  spec: AnyEndpoint,
): (request: Request, context: RouteContext) => Promise<Response> {
  return async (request, context) => {
    const requestId = requestIdOf(request);
    try {
      const principal = await authorize(spec, request);
      const params = parseWith(spec.params, await context.params, "params");
      const query = parseWith(spec.query, queryObject(request), "query");
      const rawBody =
        spec.body === undefined
          ? undefined
          : await readJson(request, { maxBytes: spec.maxBodyBytes });
      const body = parseWith(spec.body, rawBody, "body");
      const input = { params, query, body, principal, request, requestId };
      const result = await spec.handle(input);
      const status = spec.successStatus ?? 200;
      const headers = new Headers(spec.headers?.(result, input));
      headers.set("x-request-id", requestId);
      headers.set("cache-control", "no-store");
      if (status === 204) return new Response(null, { status, headers });
      const output = spec.response.safeParse(result);
      if (!output.success) {
        throw new Error(
          `response of ${spec.method} ${spec.path} does not match its schema: ${output.error.message}`,
        );
      }
      if (spec.render !== undefined) {
        const rendered = spec.render(output.data);
        headers.set("content-type", rendered.contentType);
        return new Response(rendered.body, { status, headers });
      }
      return Response.json(output.data, { status, headers });
    } catch (error: unknown) {
      return errorResponse(error, requestId);
    }
  };
}
