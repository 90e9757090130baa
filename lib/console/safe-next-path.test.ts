import { describe, expect, it } from "vitest";
import { safeNextPath } from "./safe-next-path";

describe("safeNextPath", () => {
  it("keeps a path on this site, with its query", () => {
    expect(safeNextPath("/customers/acme?tab=history")).toBe("/customers/acme?tab=history");
  });

  it.each([
    [undefined, "absent"],
    ["", "empty"],
    ["https://evil.example/", "an absolute address"],
    ["//evil.example/", "a protocol-relative address"],
    ["/\\evil.example", "a backslash trick"],
    ["javascript:alert(1)", "a script address"],
    ["/ok\r\nSet-Cookie: x=1", "a header injection"],
    ["/sign-in?next=/sign-in", "a loop back to sign-in"],
  ])("turns %j (%s) into /", (input, _why) => {
    expect(safeNextPath(input)).toBe("/");
  });
});
