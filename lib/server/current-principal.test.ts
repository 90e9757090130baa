import { describe, expect, it } from "vitest";
import { signInPath } from "./current-principal";

describe("signInPath", () => {
  it.each([
    ["/customers/acme", "/sign-in?next=%2Fcustomers%2Facme"],
    ["/audit?customerId=acme", "/sign-in?next=%2Faudit%3FcustomerId%3Dacme"],
    ["https://evil.example/", "/sign-in?next=%2F"],
    ["//evil.example/", "/sign-in?next=%2F"],
    ["/\\evil.example", "/sign-in?next=%2F"],
    ["customers", "/sign-in?next=%2F"],
  ])("comes back to %j only if it is a path on this site", (next, expected) => {
    expect(signInPath(next)).toBe(expected);
  });
});
