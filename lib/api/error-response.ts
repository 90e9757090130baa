/**
 * The API's error response, `{ error: { code, message, fieldErrors, details?, requestId } }`, and
 * the request id every response echoes. Kept apart from endpoint.ts so that code running before
 * any route (proxy.ts) can answer in the same shape without loading the services.
 */
import { randomUUID } from "node:crypto";
import { AppError, isAppError } from "@/lib/control/errors";

const REQUEST_ID = /^[A-Za-z0-9._-]{8,64}$/;

/**
 * A new id for the request, made by the server and echoed in every response as `X-Request-Id`;
 * audit entries and log lines carry it. The caller's own `X-Request-Id` never becomes it, so a
 * client cannot make a log line and an audit entry point at each other falsely: that id is kept
 * apart (`clientRequestIdOf`).
 */
export function newRequestId(): string {
  return randomUUID();
}

/**
 * The caller's `X-Request-Id` when it is sane (8 to 64 of A-Z a-z 0-9 . _ -), else null: echoed
 * as `X-Client-Request-Id` and logged beside the server's id, labelled as the client's.
 */
export function clientRequestIdOf(request: Pick<Request, "headers">): string | null {
  const given = request.headers.get("x-request-id");
  return given !== null && REQUEST_ID.test(given) ? given : null;
}

/** `extraHeaders`: what a status needs besides the defaults, e.g. `Allow` on a 405. */
export function errorResponse(
  error: unknown,
  requestId: string,
  extraHeaders: Record<string, string> = {},
): Response {
  if (!isAppError(error)) {
    // A bug, not the caller's mistake: log the cause once, here, and say nothing about it.
    console.error(`[${requestId}] unhandled error`, error);
    error = new AppError(
      "INTERNAL",
      "Something went wrong on our side. Quote the request id if you report it.",
    );
  }
  const appError = error as AppError;
  const headers = new Headers({
    ...extraHeaders,
    "x-request-id": requestId,
    "cache-control": "no-store",
  });
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
