import { describe, expect, it } from "vitest";
import { AppError } from "@/lib/control/errors";
import { JsonStreamParser } from "./json-stream-parser";
import { MAX_JSON_DEPTH } from "./read-json";

/** `pieces` fed one after the other, then the end. */
function parse(pieces: readonly (string | Uint8Array)[]): unknown {
  const encoder = new TextEncoder();
  const parser = new JsonStreamParser();
  for (const piece of pieces) {
    parser.write(typeof piece === "string" ? encoder.encode(piece) : piece);
  }
  return parser.end();
}

function failure(pieces: readonly (string | Uint8Array)[]): AppError {
  try {
    parse(pieces);
  } catch (error: unknown) {
    if (error instanceof AppError) return error;
    throw error;
  }
  throw new Error("expected the parser to fail");
}

describe("JsonStreamParser", () => {
  it.each([
    '{"a":[1,2,{"b":null}],"c":"é ✓ \\u00e9","d":-1.5e3,"e":true}',
    "[]",
    '"text"',
    "42",
    ' { "nested": { "x": [[], {}] } } ',
  ])("parses %s as JSON.parse does", (text) => {
    expect(parse([text])).toEqual(JSON.parse(text));
  });

  it("parses a body split anywhere, a multi-byte character included", () => {
    const text = '{"name":"Zoë ✓","list":[1,2,3]}';
    const bytes = new TextEncoder().encode(text);
    expect(parse(Array.from(bytes, (byte) => new Uint8Array([byte])))).toEqual(JSON.parse(text));
  });

  it('keeps "__proto__" an own property, as JSON.parse does', () => {
    const value = parse(['{"__proto__":{"polluted":true}}']) as Record<string, unknown>;
    expect(Object.hasOwn(value, "__proto__")).toBe(true);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.getPrototypeOf(value)).toBe(Object.prototype);
  });

  it.each([
    ["an empty body", [] as string[], "empty"],
    ["only spaces", ["   "], "empty"],
    ["malformed JSON", ['{"a":'], "not valid JSON"],
    ["trailing garbage", ['{"a":1} x'], "not valid JSON"],
    ["two documents", ['{"a":1}{"b":2}'], "not valid JSON"],
    ["invalid UTF-8", [new Uint8Array([0x7b, 0xff, 0x7d])], "not valid UTF-8"],
    [
      "nesting one level too deep",
      [`${"[".repeat(MAX_JSON_DEPTH + 1)}${"]".repeat(MAX_JSON_DEPTH + 1)}`],
      "nested more than",
    ],
  ])("refuses %s", (_label, pieces, message) => {
    const error = failure(pieces);
    expect(error.code).toBe("MALFORMED_JSON");
    expect(error.message).toContain(message);
  });

  it("accepts nesting at the limit, and brackets inside strings do not count", () => {
    const deep = `${"[".repeat(MAX_JSON_DEPTH)}${"]".repeat(MAX_JSON_DEPTH)}`;
    expect(parse([deep])).toBeDefined();
    const text = JSON.stringify({ s: "[".repeat(100) + '\\"{'.repeat(50) });
    expect(parse([text])).toEqual(JSON.parse(text));
  });
});
