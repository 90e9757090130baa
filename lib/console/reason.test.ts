import { describe, expect, it } from "vitest";
import { reasonProblem } from "./reason";

describe("reasonProblem", () => {
  it.each([
    ["Customer still recovering from the outage", null],
    ["  padded but real  ", null],
    ["", "Reason must not be empty."],
    ["   ", "Reason must not be empty."],
    ["line\nbreak", "Reason must not contain control characters"],
    ["bidi \u202e trick", "Reason must not contain control characters"],
    ["x".repeat(1001), "Reason must be at most 1000 characters."],
  ])("%j -> %j", (input, expected) => {
    const problem = reasonProblem(input);
    if (expected === null) expect(problem).toBeNull();
    else expect(problem).toContain(expected);
  });

  it("accepts exactly 1000 characters, as the control plane does", () => {
    expect(reasonProblem("x".repeat(1000))).toBeNull();
  });

  it("names every problem at once, each as a sentence", () => {
    expect(reasonProblem(`${"x".repeat(1000)}\tmore`)).toBe(
      "Reason must be at most 1000 characters. Reason must not contain control characters (line breaks, tabs) or bidirectional formatting characters.",
    );
  });

  it.each([
    ["", "Say why."],
    ["   ", "Say why."],
    ["line\nbreak", "Reason must not contain control characters"],
    ["a real reason", null],
  ])("with a prompt, only an empty reason gets it: %j -> %j", (input, expected) => {
    const problem = reasonProblem(input, "Say why.");
    if (expected === null) expect(problem).toBeNull();
    else expect(problem).toContain(expected);
  });
});
