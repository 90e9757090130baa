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
import { fieldErrorsFromZod } from "@limitplane/enforcer/policy";
import type { z } from "zod";
import type { Principal } from "@/lib/control/auth/principal";
import type { Permission } from "@/lib/control/auth/roles";
import { can } from "@/lib/control/auth/roles";
import { AppError, type ErrorCode, toFieldErrors, validationError } from "@/lib/control/errors";
import { isDatabaseUnavailable } from "@/lib/control/prisma-errors";
import { isCrossSiteBrowserRequest, isSafeMethod, isSameOriginRequest } from "./cross-site";
import { clientRequestIdOf, errorResponse, newRequestId } from "./error-response";
import { DEFAULT_MAX_BODY_BYTES, readJson } from "./read-json";

export type HttpMethod = "GET" | "POST" | "PUT" | "PATCH" | "DELETE";

export type { Principal };
export { errorResponse, newRequestId };

/**
 * Who may call an endpoint:
 * - `public`: anyone, no credential needed;
 * - `authenticated`: any principal, session or API token;
 * - `session`: a signed-in operator's session (its own sessions, its password, sign-out); an API
 *   token is refused with FORBIDDEN;
 * - a permission (roles.ts): any principal whose role has it.
 */
/** What an endpoint's own body reader (`readBody`) is given. */
export interface BodyReadOptions {
  readonly maxBytes: number;
  /** To be told the bytes received so far. */
  readonly onProgress: (bytesRead: number) => void;
}

export type EndpointAccess = "public" | "authenticated" | "session" | Permission;

/**
 * How the API learns who is calling. The wrapper is given it (`toRouteHandler`,
 * `createRouteHandlers`); the app's comes from the composition root, through route-handler.ts.
 */
export interface Authenticator {
  /** The principal for this request, or null when it carries no valid credential. */
  authenticate(request: Request): Promise<Principal | null>;
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
  /**
   * Reads the body instead of `readJson`, given the size limit: for bodies large enough that
   * parsing them on the event loop would stall the server (a policy import, parsed and validated
   * in a child process by read-policy-document.ts). Its result is what `body` then checks.
   * @default readJson
   */
  readBody?: (request: Request, options: BodyReadOptions) => Promise<unknown>;
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

function parseWith<T>(schema: z.ZodType<T> | undefined, value: unknown, where: string): T {
  if (schema === undefined) return undefined as T;
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  throw validationError(
    toFieldErrors(fieldErrorsFromZod(result.error), where === "body" ? [] : [where]),
  );
}

/** A route without query parameters refuses any, as a body refuses unknown fields. */
function refuseUnknownQuery(query: Record<string, unknown>): void {
  const names = Object.keys(query);
  if (names.length === 0) return;
  throw validationError(
    names.map((name) => ({
      path: `query.${name}`,
      message: `unknown query parameter "${name}": this route takes none`,
    })),
  );
}

/**
 * An outage is not a bug: Postgres not answering is a 503 the caller may retry, logged as one
 * line instead of a stack.
 */
function translateOutage(error: unknown, requestId: string): unknown {
  if (error instanceof AppError || !isDatabaseUnavailable(error)) return error;
  console.warn(`[${requestId}] database unavailable: ${String(error).split("\n").at(-1)}`);
  return new AppError(
    "DATABASE_UNAVAILABLE",
    "The database is unreachable. Retry in a few seconds; the status page says what is down.",
    { retryAfterSec: 5, cause: error },
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

/** The principal of a non-public endpoint's input (the wrapper has authenticated it). */
export function principalOf(input: { readonly principal: Principal | null }): Principal {
  if (input.principal === null) throw new Error("principalOf called on a public endpoint");
  return input.principal;
}

async function authorize(
  spec: AnyEndpoint,
  request: Request,
  authenticator: Authenticator,
): Promise<Principal | null> {
  if (spec.access === "public") {
    if (spec.refuseCrossSite === true && isCrossSiteBrowserRequest(request)) {
      throw new AppError(
        "CROSS_SITE_REQUEST",
        "This request came from another site and was refused. Sign in from the console.",
      );
    }
    return null;
  }
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

/** A line per 64 MiB of a large body received, so a long upload shows in the log as it goes. */
function bodyProgressLogger(requestId: string): (bytesRead: number) => void {
  const stepBytes = 64 * 1024 * 1024;
  let nextBytes = stepBytes;
  return (bytesRead) => {
    if (bytesRead < nextBytes) return;
    nextBytes = (Math.floor(bytesRead / stepBytes) + 1) * stepBytes;
    console.info(`[${requestId}] body: ${Math.floor(bytesRead / (1024 * 1024))} MiB received`);
  };
}

type RouteContext = { params: Promise<Record<string, string | string[] | undefined>> };
export type RouteHandler = (request: Request, context: RouteContext) => Promise<Response>;

/** The Next.js route handler for `spec`, learning who calls from `authenticator`. */
export function toRouteHandler(spec: AnyEndpoint, authenticator: Authenticator): RouteHandler {
  return async (request, context) => {
    const requestId = newRequestId();
    const response = await answerWith(spec, authenticator, request, context, requestId);
    const clientRequestId = clientRequestIdOf(request);
    if (clientRequestId !== null) response.headers.set("x-client-request-id", clientRequestId);
    return response;
  };
}

async function answerWith(
  spec: AnyEndpoint,
  authenticator: Authenticator,
  request: Request,
  context: RouteContext,
  requestId: string,
): Promise<Response> {
  try {
    const principal = await authorize(spec, request, authenticator);
    const params = parseWith(spec.params, await context.params, "params");
    const rawQuery = queryObject(request);
    if (spec.query === undefined) refuseUnknownQuery(rawQuery);
    const query = parseWith(spec.query, rawQuery, "query");
    const rawBody =
      spec.body === undefined
        ? undefined
        : spec.readBody !== undefined
          ? await spec.readBody(request, {
              maxBytes: spec.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES,
              onProgress: bodyProgressLogger(requestId),
            })
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
    return errorResponse(translateOutage(error, requestId), requestId);
  }
}

/** The methods a route file answers: its endpoints' own, and a JSON 405 for the others. */
export interface RouteHandlers {
  readonly GET: RouteHandler;
  /** Undefined where GET is defined: Next.js answers HEAD from GET. */
  readonly HEAD: RouteHandler | undefined;
  readonly OPTIONS: RouteHandler;
  readonly POST: RouteHandler;
  readonly PUT: RouteHandler;
  readonly PATCH: RouteHandler;
  readonly DELETE: RouteHandler;
}

const ANSWERED = Symbol("limitplane.answeredMethod");

/** Whether `handler` is a 405 or OPTIONS answer of `createRouteHandlers`, not an endpoint's. */
export function isMethodAnswer(handler: unknown): boolean {
  return typeof handler === "function" && ANSWERED in handler;
}

function answer(handler: RouteHandler): RouteHandler {
  return Object.assign(handler, { [ANSWERED]: true });
}

/**
 * Every method of one route file, each endpoint's authenticated by `authenticator`. A method no
 * endpoint defines answers 405 METHOD_NOT_ALLOWED in the API's error shape, with `Allow`; OPTIONS
 * answers 204 with `Allow`. Route files call it through route-handler.ts's `routeHandlers`.
 */
export function createRouteHandlers(
  authenticator: Authenticator,
  endpoints: readonly AnyEndpoint[],
): RouteHandlers {
  const own = new Map<HttpMethod, RouteHandler>(
    endpoints.map((endpoint) => [endpoint.method, toRouteHandler(endpoint, authenticator)]),
  );
  const { notAllowed, options } = methodAnswers([...own.keys()]);
  const pick = (method: HttpMethod) => own.get(method) ?? notAllowed;
  return {
    GET: pick("GET"),
    HEAD: own.has("GET") ? undefined : notAllowed,
    OPTIONS: options,
    POST: pick("POST"),
    PUT: pick("PUT"),
    PATCH: pick("PATCH"),
    DELETE: pick("DELETE"),
  };
}

/**
 * The 405 and the OPTIONS answer of a route whose own methods are `allowed`; for route files
 * that are not endpoints (`/api/health`).
 */
export function methodAnswers(allowed: readonly HttpMethod[]): {
  readonly notAllowed: RouteHandler;
  readonly options: RouteHandler;
} {
  const allow = [...allowed, ...(allowed.includes("GET") ? ["HEAD"] : []), "OPTIONS"].join(", ");
  const notAllowed = answer(async (request) =>
    errorResponse(
      new AppError(
        "METHOD_NOT_ALLOWED",
        `${request.method} is not allowed here; this route answers ${allow}.`,
        { details: { allow: allow.split(", ") } },
      ),
      newRequestId(),
      { allow },
    ),
  );
  const options = answer(
    async () =>
      new Response(null, {
        status: 204,
        headers: { allow, "x-request-id": newRequestId(), "cache-control": "no-store" },
      }),
  );
  return { notAllowed, options };
}

/** The catch-all under /api: no route has this path. */
export const routeNotFound: RouteHandler = answer(async (request) =>
  errorResponse(
    new AppError(
      "NOT_FOUND",
      `No API route at ${new URL(request.url).pathname}. The routes are listed in /api/v1/openapi.json.`,
    ),
    newRequestId(),
  ),
);
