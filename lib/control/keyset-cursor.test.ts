import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { AppError } from "./errors";
import {
  decodeCursor,
  decodeOptionalCursor,
  encodeCursor,
  MAX_CURSOR_LENGTH,
  parseCursor,
} from "./keyset-cursor";

const AT = new Date("2025-03-04T10:05:07.123Z");

function refusal(raw: unknown, options = {}): string {
  const result = parseCursor(raw, options);
  if (result.ok) throw new Error(`accepted ${JSON.stringify(raw)}`);
  return result.message;
}

describe("encode and decode", () => {
  it("round-trips a position to the millisecond", () => {
    const cursor = encodeCursor({ at: AT, id: "clx1abc_DEF-2" });
    expect(cursor).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(decodeCursor(cursor)).toEqual({ atMs: AT.getTime(), id: "clx1abc_DEF-2" });
  });

  it("takes bigint ids, as Prisma returns them, and keeps them in bigint range", () => {
    const cursor = encodeCursor(
      { at: AT.getTime(), id: 9_223_372_036_854_775_807n },
      { idKind: "decimal" },
    );
    const { id } = decodeCursor(cursor, { idKind: "decimal" });
    expect(BigInt(id)).toBe(9_223_372_036_854_775_807n);
    expect(() =>
      encodeCursor({ at: AT, id: 9_223_372_036_854_775_808n }, { idKind: "decimal" }),
    ).toThrow(RangeError);
    expect(() => encodeCursor({ at: AT, id: "12a" }, { idKind: "decimal" })).toThrow(RangeError);
  });

  it("a decimal cursor refuses an id that BigInt() or the column could not take", () => {
    const tooBig = encodeCursor({ at: AT, id: "9223372036854775808" });
    expect(refusal(tooBig, { idKind: "decimal" })).toBe("is not a page cursor");
    const word = encodeCursor({ at: AT, id: "abc" });
    expect(refusal(word, { idKind: "decimal" })).toBe("is not a page cursor");
    const leadingZero = encodeCursor({ at: AT, id: "007" });
    expect(refusal(leadingZero, { idKind: "decimal" })).toBe("is not a page cursor");
  });

  it("refuses to encode a position no row can have", () => {
    expect(() => encodeCursor({ at: new Date("nope"), id: "1" })).toThrow(RangeError);
    expect(() => encodeCursor({ at: -1, id: "1" })).toThrow(RangeError);
    expect(() => encodeCursor({ at: 1.5, id: "1" })).toThrow(RangeError);
    expect(() => encodeCursor({ at: AT, id: "a:b" })).toThrow(RangeError);
    expect(() => encodeCursor({ at: AT, id: "" })).toThrow(RangeError);
    expect(() => encodeCursor({ at: AT, id: 2 ** 60 })).toThrow(RangeError);
  });

  it("round-trips any valid position (property)", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 8_640_000_000_000_000 }),
        fc.stringMatching(/^[A-Za-z0-9_-]{1,64}$/),
        (atMs, id) => {
          expect(decodeCursor(encodeCursor({ at: atMs, id }))).toEqual({ atMs, id });
        },
      ),
    );
  });
});

describe("hostile and malformed cursors", () => {
  const b64 = (text: string) =>
    btoa(text).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");

  it.each([
    ["", "is empty"],
    ["x".repeat(MAX_CURSOR_LENGTH + 1), `is longer than ${MAX_CURSOR_LENGTH} characters`],
    ["<script>alert(1)</script>", "contains characters a page cursor never has"],
    ["../../etc/passwd", "contains characters a page cursor never has"],
    ["abc def", "contains characters a page cursor never has"],
    ["abc%00", "contains characters a page cursor never has"],
    ["😀", "contains characters a page cursor never has"],
    ["MToxOjE=", "contains characters a page cursor never has"],
    ["a", "is not a page cursor"],
    [b64("garbage"), "is not a page cursor"],
    [b64("2:1741082707123:1"), "is from another version of the console"],
    [b64("1:-5:1"), "is not a page cursor"],
    [b64("1:1.5:1"), "is not a page cursor"],
    [b64("1:0017:1"), "is not a page cursor"],
    [b64("1:1e3:1"), "is not a page cursor"],
    [b64("1:99999999999999999:1"), "is not a page cursor"],
    [b64("1:8640000000000001:1"), "is not a page cursor"],
    [b64("1:1741082707123:"), "is not a page cursor"],
    [b64("1:1741082707123:a:b"), "is not a page cursor"],
    [b64("1:1741082707123:a b"), "is not a page cursor"],
    [b64(`1:1741082707123:${"a".repeat(65)}`), "is not a page cursor"],
    [b64("1:1741082707123:\u0000"), "is not a page cursor"],
  ])("refuses %j: %s", (raw, message) => {
    expect(refusal(raw)).toBe(message);
  });

  it("refuses a second spelling of a valid cursor (stray low bits)", () => {
    const valid = encodeCursor({ at: AT, id: "1" });
    // The last character of unpadded base64 carries bits that decoding ignores; change them.
    const last = valid.at(-1) ?? "";
    const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    const twin = alphabet[alphabet.indexOf(last) + 1] ?? "A";
    const tampered = `${valid.slice(0, -1)}${twin}`;
    // "1:<13 digits>:1" is 17 bytes, so the last of its 23 characters has 2 unused bits, which a
    // valid cursor leaves at 0: the twin decodes to the same text, and is still refused.
    expect(atob(tampered.replace(/-/g, "+").replace(/_/g, "/"))).toBe(`1:${AT.getTime()}:1`);
    expect(refusal(tampered)).toBe("is not a page cursor");
  });

  it("refuses values that are not one string", () => {
    for (const raw of [undefined, null, 42, {}, ["a", "b"], ["abc"]]) {
      expect(refusal(raw)).toBe("must be a single text value");
    }
  });

  it("never throws anything but the 400 on random input (property)", () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 300, unit: "binary" }), (raw) => {
        try {
          decodeCursor(raw);
        } catch (error: unknown) {
          expect(error).toBeInstanceOf(AppError);
        }
      }),
    );
  });

  it("a refused cursor is a 400 that names the field and never echoes the input", () => {
    let caught: unknown;
    try {
      decodeCursor("<script>", { field: "after" });
    } catch (error: unknown) {
      caught = error;
    }
    if (!(caught instanceof AppError)) throw new Error("expected an AppError");
    const appError = caught;
    expect(appError.status).toBe(400);
    expect(appError.code).toBe("VALIDATION_FAILED");
    expect(appError.message).toBe(
      "This page link is broken or out of date. Go back to the first page of the list.",
    );
    expect(appError.fieldErrors).toEqual([
      { path: "after", message: "after contains characters a page cursor never has" },
    ]);
    expect(JSON.stringify(appError.fieldErrors)).not.toContain("<script>");
  });

  it("an absent optional cursor is the first page; several are refused", () => {
    expect(decodeOptionalCursor(undefined)).toBeNull();
    expect(decodeOptionalCursor(null)).toBeNull();
    expect(decodeOptionalCursor("")).toBeNull();
    const cursor = encodeCursor({ at: AT, id: "1" });
    expect(decodeOptionalCursor(cursor)).toEqual({ atMs: AT.getTime(), id: "1" });
    expect(() => decodeOptionalCursor([cursor, cursor])).toThrow(AppError);
  });
});
