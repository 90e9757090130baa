/**
 * The control plane's one error type. Services throw `AppError` for anything a caller can act on
 * (bad input, a stale version, a missing entity, a missing permission); route handlers map `code` to
 * an HTTP status through `HTTP_STATUS` and never show anything else. Anything that is not an
 * `AppError` is a bug: it becomes a 500 with a generic message, and its cause is logged once.
 */
import type { FieldPath, PolicyFieldError } from "@limitplane/enforcer/policy";
import { formatFieldPath } from "@limitplane/enforcer/policy";

export const ERROR_CODES = [
  "VALIDATION_FAILED",
  "MALFORMED_JSON",
  "MALFORMED_URL",
  "UNSUPPORTED_MEDIA_TYPE",
  "PAYLOAD_TOO_LARGE",
  "UNAUTHENTICATED",
  "FORBIDDEN",
  "CROSS_SITE_REQUEST",
  "NOT_FOUND",
  "METHOD_NOT_ALLOWED",
  "CONFLICT",
  "VERSION_CONFLICT",
  "APPROVAL_REQUIRED",
  "STALE_CHANGE_REQUEST",
  "RATE_LIMITED",
  "UNAVAILABLE",
  "DATABASE_UNAVAILABLE",
  "INTERNAL",
] as const;
export type ErrorCode = (typeof ERROR_CODES)[number];

/** The one table from error code to HTTP status. */
export const HTTP_STATUS: Record<ErrorCode, number> = {
  VALIDATION_FAILED: 400,
  MALFORMED_JSON: 400,
  MALFORMED_URL: 400,
  UNSUPPORTED_MEDIA_TYPE: 415,
  PAYLOAD_TOO_LARGE: 413,
  UNAUTHENTICATED: 401,
  FORBIDDEN: 403,
  CROSS_SITE_REQUEST: 403,
  NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  CONFLICT: 409,
  VERSION_CONFLICT: 409,
  /** The change needs a second person: request it (POST /api/v1/change-requests). */
  APPROVAL_REQUIRED: 409,
  /** The policy changed since the request was previewed: re-preview it before deciding. */
  STALE_CHANGE_REQUEST: 409,
  RATE_LIMITED: 429,
  UNAVAILABLE: 503,
  DATABASE_UNAVAILABLE: 503,
  INTERNAL: 500,
};

/** A field error as clients receive it: the path as text (`tiers[0].limit.capacity`). */
export interface FieldError {
  readonly path: string;
  readonly message: string;
}

export function toFieldErrors(
  errors: readonly PolicyFieldError[],
  prefix: FieldPath = [],
): FieldError[] {
  return errors.map((error) => ({
    path: formatFieldPath([...prefix, ...error.path]),
    message: error.message,
  }));
}

export interface AppErrorOptions {
  fieldErrors?: readonly FieldError[];
  /** Extra data safe to show the caller, e.g. the current entity on a version conflict. */
  details?: Record<string, unknown>;
  /** For logs only; never sent to a client. */
  cause?: unknown;
  /** Seconds until retrying may succeed (429, 503). */
  retryAfterSec?: number;
}

export class AppError extends Error {
  override name = "AppError";
  readonly code: ErrorCode;
  readonly fieldErrors: readonly FieldError[];
  readonly details: Record<string, unknown> | undefined;
  readonly retryAfterSec: number | undefined;

  /** `message` is shown to the caller: write it for a person who must act on it. */
  constructor(code: ErrorCode, message: string, options: AppErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.fieldErrors = options.fieldErrors ?? [];
    this.details = options.details;
    this.retryAfterSec = options.retryAfterSec;
  }

  get status(): number {
    return HTTP_STATUS[this.code];
  }
}

export function validationError(fieldErrors: readonly FieldError[], message?: string): AppError {
  const first = fieldErrors[0];
  const summary =
    message ??
    (first === undefined
      ? "The request is invalid."
      : fieldErrors.length === 1
        ? `${first.path}: ${first.message}`
        : `${fieldErrors.length} fields are invalid; the first is ${first.path}: ${first.message}`);
  return new AppError("VALIDATION_FAILED", summary, { fieldErrors });
}

export function notFound(entity: string, id: string): AppError {
  return new AppError("NOT_FOUND", `${entity} "${id}" does not exist.`, {
    details: { entity, id },
  });
}

export function isAppError(error: unknown): error is AppError {
  return error instanceof AppError;
}
