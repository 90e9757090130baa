/**
 * What a failed sign-in says, from the API's answer: pure, so every status is tested without a
 * server. A failure the person cannot fix themselves (the console or a service it needs is down)
 * carries the request id, which the message asks them to quote and the server's log is keyed by.
 */

export interface SignInFailure {
  readonly message: string;
  /** Shown beside the message, to quote when reporting; `null` where it would only be noise. */
  readonly requestId: string | null;
}

export interface SignInAnswer {
  readonly status: number;
  /** The `Retry-After` header, seconds. */
  readonly retryAfter: string | null;
  /** The `X-Request-Id` header, every API answer has one. */
  readonly requestIdHeader: string | null;
  /** The parsed JSON body, whatever it holds; `null` when it was not JSON. */
  readonly body: unknown;
}

const SANE_REQUEST_ID = /^[A-Za-z0-9._-]{1,64}$/;

function errorFieldOf(body: unknown, field: "message" | "requestId"): string | null {
  if (typeof body !== "object" || body === null || !("error" in body)) return null;
  const { error } = body;
  if (typeof error !== "object" || error === null || !(field in error)) return null;
  const value: unknown = (error as Record<string, unknown>)[field];
  return typeof value === "string" && value !== "" ? value : null;
}

export function describeSignInFailure(answer: SignInAnswer): SignInFailure {
  if (answer.status === 429) {
    const seconds = Number(answer.retryAfter);
    return {
      message:
        Number.isFinite(seconds) && seconds > 0
          ? `Too many attempts. Try again in ${Math.ceil(seconds)} s.`
          : "Too many attempts. Wait a little and try again.",
      requestId: null,
    };
  }
  if (answer.status === 401) {
    return { message: "That email and password do not match an active account.", requestId: null };
  }
  const candidate = errorFieldOf(answer.body, "requestId") ?? answer.requestIdHeader;
  const requestId =
    candidate !== null && SANE_REQUEST_ID.test(candidate) && answer.status >= 500
      ? candidate
      : null;
  const message =
    errorFieldOf(answer.body, "message") ??
    (answer.status >= 500
      ? `Sign-in failed on the console's side (HTTP ${answer.status}). Quote the request id if you report it.`
      : `Sign-in failed (HTTP ${answer.status}).`);
  return { message, requestId };
}
