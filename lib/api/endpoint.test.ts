/**
 * What the wrapper guarantees whatever an endpoint does: a bug is a 500 with a generic message and
 * the request id, its cause logged once and never sent; a response that does not match its schema
 * is a bug too; an AppError keeps its status, code, field errors and Retry-After; and the output
 * schema strips what it does not describe.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { z } from "zod";
import type { Principal } from "@/lib/control/auth/principal";
import { AppError } from "@/lib/control/errors";
import { type Authenticator, defineEndpoint, toRouteHandler } from "./endpoint";

const context = { params: Promise.resolve({}) };

/** For public endpoints: any call to it is a bug of the wrapper. */
const noAuthenticator: Authenticator = {
  authenticate: () => Promise.reject(new Error("a public endpoint authenticated")),
};

function call(handle: () => Promise<unknown>, response: z.ZodType = z.unknown()) {
  const endpoint = defineEndpoint({
    method: "GET",
    path: "/api/v1/test",
    summary: "test",
    tag: "Test",
    access: "public",
    response,
    handle,
  });
  return toRouteHandler(endpoint, noAuthenticator)(
    new Request("http://console.test/api/v1/test", { headers: { "x-request-id": "req-12345678" } }),
    context,
  );
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe("toRouteHandler", () => {
  it("500: a thrown bug becomes a generic message with the request id; the cause is logged once, never sent", async () => {
    const log = vi.spyOn(console, "error").mockImplementation(() => {});
    const response = await call(async () => {
      throw new Error("connection to db.internal:5432 refused; password=hunter2");
    });
    expect(response.status).toBe(500);
    const text = await response.text();
    const requestId = response.headers.get("x-request-id") ?? "";
    expect(requestId).toMatch(/^[0-9a-f-]{36}$/);
    expect(JSON.parse(text)).toEqual({
      error: {
        code: "INTERNAL",
        message: "Something went wrong on our side. Quote the request id if you report it.",
        fieldErrors: [],
        requestId,
      },
    });
    expect(text).not.toMatch(/hunter2|db\.internal|at .*\(/);
    expect(log).toHaveBeenCalledTimes(1);
    expect(String(log.mock.calls[0]?.[0])).toContain(requestId);
  });

  it("500: a result that does not match the response schema is a bug, not a leak", async () => {
    vi.spyOn(console, "error").mockImplementation(() => {});
    // A distinctive value: the random request id in the body must not be able to match it.
    const response = await call(
      async () => ({ name: 987_654_321 }),
      z.object({ name: z.string() }),
    );
    expect(response.status).toBe(500);
    expect(await response.text()).not.toContain("987654321");
  });

  it("the response schema strips fields it does not describe (a hash never leaves)", async () => {
    const response = await call(
      async () => ({ id: "op_1", passwordHash: "scrypt$...", nested: { tokenHash: "ab", ok: 1 } }),
      z.object({ id: z.string(), nested: z.object({ ok: z.number() }) }),
    );
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ id: "op_1", nested: { ok: 1 } });
  });

  it("an AppError keeps its status, code, field errors and Retry-After, and is not logged", async () => {
    const log = vi.spyOn(console, "error").mockImplementation(() => {});
    const response = await call(async () => {
      throw new AppError("RATE_LIMITED", "Too many attempts. Wait 7 s.", { retryAfterSec: 7 });
    });
    expect(response.status).toBe(429);
    expect(response.headers.get("retry-after")).toBe("7");
    expect(response.headers.get("cache-control")).toBe("no-store");
    expect((await response.json()).error).toMatchObject({ code: "RATE_LIMITED" });
    expect(log).not.toHaveBeenCalled();
  });

  it("the server makes every request id; a caller's sane one is echoed apart, an insane one dropped", async () => {
    const endpoint = defineEndpoint({
      method: "GET",
      path: "/api/v1/test",
      summary: "test",
      tag: "Test",
      access: "public",
      response: z.object({ ok: z.boolean() }),
      handle: async () => ({ ok: true }),
    });
    const handler = toRouteHandler(endpoint, noAuthenticator);
    const sane = await handler(
      new Request("http://x/api/v1/test", { headers: { "x-request-id": "forged-request-id" } }),
      context,
    );
    expect(sane.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
    expect(sane.headers.get("x-client-request-id")).toBe("forged-request-id");
    const insane = await handler(
      new Request("http://x/api/v1/test", { headers: { "x-request-id": "<script>" } }),
      context,
    );
    expect(insane.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
    expect(insane.headers.get("x-client-request-id")).toBeNull();
  });

  it("401 and 200: the authenticator it is given decides who calls, per request", async () => {
    const operator: Principal = {
      kind: "operator",
      id: "op_1",
      name: "Dana",
      role: "viewer",
      sessionId: "s_1",
    };
    const authenticator: Authenticator = {
      authenticate: async (request) =>
        request.headers.get("authorization") === "Bearer good" ? operator : null,
    };
    const handler = toRouteHandler(
      defineEndpoint({
        method: "GET",
        path: "/api/v1/test",
        summary: "test",
        tag: "Test",
        access: "authenticated",
        response: z.object({ id: z.string() }),
        handle: async ({ principal }) => ({ id: principal?.id ?? "" }),
      }),
      authenticator,
    );
    const call = (authorization: string) =>
      handler(new Request("http://x/api/v1/test", { headers: { authorization } }), context);
    const refused = await call("Bearer bad");
    expect(refused.status).toBe(401);
    expect((await refused.json()).error).toMatchObject({ code: "UNAUTHENTICATED" });
    const allowed = await call("Bearer good");
    expect(allowed.status).toBe(200);
    expect(await allowed.json()).toEqual({ id: "op_1" });
  });
});
