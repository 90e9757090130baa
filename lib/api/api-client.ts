/**
 * The console's browser side of the API: one JSON request, and its answer as a result. A failure
 * carries the API's error body (error-response.ts), read defensively: a proxy or a crashed server
 * may answer instead, with anything or nothing. Client components import it, so it stays pure
 * (`fetch` aside).
 */
import { z } from "zod";
import { ERROR_CODES, type ErrorCode, type FieldError } from "@/lib/control/errors";

export interface ApiError {
  readonly status: number;
  /** The API's code; null when the answer carried none (a proxy's page, an empty body). */
  readonly code: ErrorCode | null;
  readonly message: string;
  /** The well-formed ones; anything else in the list is left out. */
  readonly fieldErrors: readonly FieldError[];
}

export type ApiResult<Body> =
  | { readonly ok: true; readonly status: number; readonly body: Body }
  | { readonly ok: false; readonly error: ApiError };

export interface ApiRequest {
  readonly method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE";
  /** Sent as JSON. */
  readonly body?: unknown;
  readonly signal?: AbortSignal;
}

const ZApiErrorBody = z.object({
  error: z.object({
    code: z.enum(ERROR_CODES).nullable().catch(null),
    message: z.string().min(1).nullable().catch(null),
    fieldErrors: z
      .array(z.object({ path: z.string(), message: z.string() }).nullable().catch(null))
      .catch([]),
  }),
});

/** The API's error body in `payload` (parsed JSON, or null), or what can be said without one. */
export function readApiError(payload: unknown, status: number): ApiError {
  const parsed = ZApiErrorBody.safeParse(payload);
  const error = parsed.success ? parsed.data.error : null;
  return {
    status,
    code: error?.code ?? null,
    message:
      error?.message ??
      (status === 403
        ? "Your role may not do this."
        : `The server answered ${status} without an explanation. Try again.`),
    fieldErrors: (error?.fieldErrors ?? []).filter((item) => item !== null),
  };
}

/**
 * Sends `request` to `path` on this origin. An answer is a result, failures included; no answer
 * at all (offline, aborted) rejects as `fetch` does, so each caller says what that means for what
 * it was doing. `Body` is what the endpoint's response schema describes: the API parses every
 * answer through it before sending. A body that is not JSON reads as null.
 */
export async function callApi<Body>(path: string, request: ApiRequest): Promise<ApiResult<Body>> {
  const response = await fetch(path, {
    method: request.method,
    ...(request.body === undefined
      ? {}
      : { headers: { "content-type": "application/json" }, body: JSON.stringify(request.body) }),
    signal: request.signal,
  });
  const payload: unknown = await response.json().catch(() => null);
  if (!response.ok) return { ok: false, error: readApiError(payload, response.status) };
  return { ok: true, status: response.status, body: payload as Body };
}
