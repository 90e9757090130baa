import { describe, expect, it } from "vitest";
import { readApiError } from "./api-client";

describe("readApiError", () => {
  it("reads the API's error body: code, message and field errors", () => {
    const payload = {
      error: {
        code: "VALIDATION_FAILED",
        message: "Fix the fields.",
        fieldErrors: [{ path: "limit.capacity", message: "must be at least 1" }],
        requestId: "req-12345678",
      },
    };
    expect(readApiError(payload, 400)).toEqual({
      status: 400,
      code: "VALIDATION_FAILED",
      message: "Fix the fields.",
      fieldErrors: [{ path: "limit.capacity", message: "must be at least 1" }],
    });
  });

  it.each([
    [
      "a proxy's page (not JSON)",
      null,
      502,
      "The server answered 502 without an explanation. Try again.",
    ],
    ["an empty object", {}, 500, "The server answered 500 without an explanation. Try again."],
    ["a 403 without a body", null, 403, "Your role may not do this."],
    [
      "an error that is not an object",
      { error: "nope" },
      409,
      "The server answered 409 without an explanation. Try again.",
    ],
  ])("says what it can of %s, with no code", (_label, payload, status, message) => {
    expect(readApiError(payload, status)).toEqual({ status, code: null, message, fieldErrors: [] });
  });

  it("keeps the well-formed field errors and the message when the rest is malformed", () => {
    const payload = {
      error: {
        code: "NOT_A_CODE",
        message: "Refused.",
        fieldErrors: [{ path: "reason", message: "is required" }, { path: 3 }, "text", null],
      },
    };
    expect(readApiError(payload, 400)).toEqual({
      status: 400,
      code: null,
      message: "Refused.",
      fieldErrors: [{ path: "reason", message: "is required" }],
    });
  });
});
