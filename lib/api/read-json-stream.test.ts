import { describe, expect, it } from "vitest";
import { AppError } from "@/lib/control/errors";
import { MAX_JSON_DEPTH } from "./read-json";
import { readJsonStreaming, SLICE_CHARS } from "./read-json-stream";

const MAX = 1024 * 1024;

function post(
  body: BodyInit | null,
  headers: Record<string, string> = { "content-type": "application/json" },
) {
  return new Request("http://test.local/api", { method: "POST", body, headers });
}

/** A body that arrives in the given pieces, as a slow upload does. */
function streamed(pieces: readonly (string | Uint8Array)[]): Request {
  const encoder = new TextEncoder();
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      for (const piece of pieces) {
        controller.enqueue(typeof piece === "string" ? encoder.encode(piece) : piece);
      }
      controller.close();
    },
  });
  return new Request("http://test.local/api", {
    method: "POST",
    body,
    headers: { "content-type": "application/json" },
    duplex: "half",
  } as RequestInit);
}

async function failure(request: Request, maxBytes = MAX): Promise<AppError> {
  try {
    await readJsonStreaming(request, { maxBytes });
  } catch (error: unknown) {
    if (error instanceof AppError) return error;
    throw error;
  }
  throw new Error("expected readJsonStreaming to fail");
}

describe("readJsonStreaming", () => {
  it.each([
    '{"a":[1,2,{"b":null}],"c":"é ✓ \\u00e9","d":-1.5e3,"e":true}',
    "[]",
    '"text"',
    "42",
    ' { "nested": { "x": [[], {}] } } ',
  ])("parses %s as JSON.parse does", async (text) => {
    expect(await readJsonStreaming(post(text), { maxBytes: MAX })).toEqual(JSON.parse(text));
  });

  it("parses a body split anywhere, a multi-byte character included", async () => {
    const text = '{"name":"Zoë ✓","list":[1,2,3]}';
    const bytes = new TextEncoder().encode(text);
    const pieces = Array.from(bytes, (byte) => new Uint8Array([byte]));
    expect(await readJsonStreaming(streamed(pieces), { maxBytes: MAX })).toEqual(JSON.parse(text));
  });

  it('keeps "__proto__" an own property, as JSON.parse does', async () => {
    const value = (await readJsonStreaming(post('{"__proto__":{"polluted":true}}'), {
      maxBytes: MAX,
    })) as Record<string, unknown>;
    expect(Object.hasOwn(value, "__proto__")).toBe(true);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.getPrototypeOf(value)).toBe(Object.prototype);
  });

  it.each([
    ["no content type", post("{}", {}), "UNSUPPORTED_MEDIA_TYPE"],
    ["an empty body", post(""), "MALFORMED_JSON"],
    ["only spaces", post("   "), "MALFORMED_JSON"],
    ["malformed JSON", post('{"a":'), "MALFORMED_JSON"],
    ["trailing garbage", post('{"a":1} x'), "MALFORMED_JSON"],
    ["two documents", post('{"a":1}{"b":2}'), "MALFORMED_JSON"],
    ["invalid UTF-8", post(new Uint8Array([0x7b, 0xff, 0x7d])), "MALFORMED_JSON"],
    [
      "nesting one level too deep",
      post(`${"[".repeat(MAX_JSON_DEPTH + 1)}${"]".repeat(MAX_JSON_DEPTH + 1)}`),
      "MALFORMED_JSON",
    ],
    ["a declared size over the limit", post("x".repeat(MAX + 1)), "PAYLOAD_TOO_LARGE"],
  ])("refuses %s", async (_label, request, code) => {
    expect((await failure(request)).code).toBe(code);
  });

  it("accepts nesting at the limit, and brackets inside strings do not count", async () => {
    const deep = `${"[".repeat(MAX_JSON_DEPTH)}${"]".repeat(MAX_JSON_DEPTH)}`;
    await expect(readJsonStreaming(post(deep), { maxBytes: MAX })).resolves.toBeDefined();
    const text = JSON.stringify({ s: "[".repeat(100) + '\\"{'.repeat(50) });
    expect(await readJsonStreaming(post(text), { maxBytes: MAX })).toEqual(JSON.parse(text));
  });

  it("refuses a body without a declared size once it streams past the limit", async () => {
    const error = await failure(
      streamed(['{"a":"', "x".repeat(600), "x".repeat(600), '"}']),
      1_000,
    );
    expect(error.code).toBe("PAYLOAD_TOO_LARGE");
  });

  it("lets other work run while it parses a large body", async () => {
    const text = JSON.stringify({ rows: Array.from({ length: 40_000 }, (_, i) => ({ id: i })) });
    expect(text.length).toBeGreaterThan(4 * SLICE_CHARS);
    let turns = 0;
    let parsing = true;
    const ticker = (async () => {
      while (parsing) {
        turns++;
        await new Promise((resolve) => setImmediate(resolve));
      }
    })();
    const value = await readJsonStreaming(post(text), { maxBytes: 8 * MAX });
    parsing = false;
    await ticker;
    expect(value).toEqual(JSON.parse(text));
    // At least one turn of other work between every two slices.
    expect(turns).toBeGreaterThanOrEqual(Math.floor(text.length / SLICE_CHARS));
  });
});
