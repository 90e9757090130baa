import { describe, expect, it } from "vitest";
import { formatDescriptorLines, parseDescriptorLines } from "./descriptor-lines";

describe("parseDescriptorLines", () => {
  it.each([
    ["tenant=acme", [[{ key: "tenant", value: "acme" }]]],
    [
      "key_1=value_1, user=bob\n\n  tenant=acme  ",
      [
        [
          { key: "key_1", value: "value_1" },
          { key: "user", value: "bob" },
        ],
        [{ key: "tenant", value: "acme" }],
      ],
    ],
    ["path=/a?b=c", [[{ key: "path", value: "/a?b=c" }]]],
    ["lonely", [[{ key: "lonely", value: "" }]]],
    ["", []],
  ])("reads %j", (text, expected) => {
    expect(parseDescriptorLines(text)).toEqual(expected);
  });

  it("a descriptor written back reads the same", () => {
    const descriptors = [
      [
        { key: "a", value: "1" },
        { key: "b", value: "x=y" },
      ],
      [{ key: "c", value: "3" }],
    ];
    expect(parseDescriptorLines(formatDescriptorLines(descriptors))).toEqual(descriptors);
  });
});
