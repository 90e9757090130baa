import { describe, expect, it } from "vitest";
import { AppError } from "@/lib/control/errors";
import { jsonDepth, MAX_JSON_DEPTH, readJson } from "./read-json";

function post(
  body: BodyInit | null,
  headers: Record<string, string> = { "content-type": "application/json" },
) {
  return new Request("http://test.local/api", { method: "POST", body, headers });
}

async function failure(request: Request, options = {}): Promise<AppError> {
  try {
    await readJson(request, options);
  } catch (error: unknown) {
    if (error instanceof AppError) return error;
    throw error;
  }
  throw new Error("expected readJson to fail");
}

describe("readJson", () => {
  it("parses a JSON object", async () => {
    expect(await readJson(post('{"a":[1,2]}'))).toEqual({ a: [1, 2] });
  });

  it.each([
    ["no content type", post("{}", {}), "UNSUPPORTED_MEDIA_TYPE", 415],
    [
      "a form",
      post("a=1", { "content-type": "application/x-www-form-urlencoded" }),
      "UNSUPPORTED_MEDIA_TYPE",
      415,
    ],
    ["an empty body", post(""), "MALFORMED_JSON", 400],
    ["malformed JSON", post('{"a":'), "MALFORMED_JSON", 400],
    ["invalid UTF-8", post(new Uint8Array([0x7b, 0xff, 0x7d])), "MALFORMED_JSON", 400],
    ["deep nesting", post(`${"[".repeat(10_000)}${"]".repeat(10_000)}`), "MALFORMED_JSON", 400],
  ])("refuses %s with %s", async (_label, request, code, status) => {
    const error = await failure(request);
    expect(error.code).toBe(code);
    expect(error.status).toBe(status);
  });

  it("stops reading at the size limit even when Content-Length lies", async () => {
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        controller.enqueue(new TextEncoder().encode(" ".repeat(1024)));
      },
    });
    const request = new Request("http://test.local/api", {
      method: "POST",
      body: stream,
      headers: { "content-type": "application/json", "content-length": "2" },
      duplex: "half",
    } as RequestInit);
    const error = await failure(request, { maxBytes: 10_000 });
    expect(error.code).toBe("PAYLOAD_TOO_LARGE");
    expect(error.status).toBe(413);
  });

  it("refuses a declared size above the limit without reading", async () => {
    const error = await failure(
      post("{}", { "content-type": "application/json", "content-length": "999999999" }),
    );
    expect(error.code).toBe("PAYLOAD_TOO_LARGE");
  });
});

describe("jsonDepth", () => {
  it("ignores brackets inside strings", () => {
    expect(jsonDepth('{"a":"[[[[{{{{"}')).toBe(1);
    expect(jsonDepth('{"a":"\\"[["}')).toBe(1);
    expect(jsonDepth("[[[]]]")).toBe(3);
    expect(jsonDepth(`${"[".repeat(MAX_JSON_DEPTH)}${"]".repeat(MAX_JSON_DEPTH)}`)).toBe(
      MAX_JSON_DEPTH,
    );
  });
});
