import { describe, expect, it } from "vitest";
import { describeSignInFailure } from "./sign-in-failure";

const base = { retryAfter: null, requestIdHeader: null, body: null };

describe("describeSignInFailure", () => {
  it("a 500 shows the request id the message asks to quote, from the body", () => {
    const failure = describeSignInFailure({
      ...base,
      status: 500,
      requestIdHeader: "from-header-1",
      body: {
        error: {
          code: "INTERNAL",
          message: "Something went wrong on our side. Quote the request id if you report it.",
          requestId: "3f1c9a2e-77aa-4c61-9d2b-0c5e1f6a8b90",
        },
      },
    });
    expect(failure).toEqual({
      message: "Something went wrong on our side. Quote the request id if you report it.",
      requestId: "3f1c9a2e-77aa-4c61-9d2b-0c5e1f6a8b90",
    });
  });

  it("a 503 without a JSON body still names the id from the header", () => {
    expect(
      describeSignInFailure({ ...base, status: 503, requestIdHeader: "req-12345678" }),
    ).toEqual({
      message:
        "Sign-in failed on the console's side (HTTP 503). Quote the request id if you report it.",
      requestId: "req-12345678",
    });
  });

  it.each([
    [401, "That email and password do not match an active account."],
    [429, "Too many attempts. Wait a little and try again."],
  ])("a %i is the person's to fix: no request id", (status, message) => {
    expect(describeSignInFailure({ ...base, status, requestIdHeader: "req-12345678" })).toEqual({
      message,
      requestId: null,
    });
  });

  it("says how long to wait after a 429 with Retry-After", () => {
    expect(describeSignInFailure({ ...base, status: 429, retryAfter: "4.2" }).message).toBe(
      "Too many attempts. Try again in 5 s.",
    );
  });

  it("never shows a hostile id: markup or spaces in it are dropped", () => {
    const failure = describeSignInFailure({
      ...base,
      status: 500,
      body: { error: { message: "m", requestId: "<img src=x onerror=alert(1)>" } },
    });
    expect(failure.requestId).toBeNull();
  });
});
