import { describe, expect, it } from "vitest";
import { claimValues, parseRoleMap, roleFromClaims } from "./sso-settings";

const settings = {
  roleClaim: "groups",
  roleGrants: [
    { value: "lp-admins", role: "admin" },
    { value: "sre", role: "operator" },
    { value: "staff", role: "viewer" },
  ],
} as const;

describe("roles from claims", () => {
  it.each([
    [{ groups: ["staff"] }, "viewer"],
    [{ groups: ["staff", "sre"] }, "operator"],
    [{ groups: ["lp-admins", "staff"] }, "admin"],
    [{ groups: "sre" }, "operator"],
    [{ groups: ["contractors"] }, null],
    [{ groups: [] }, null],
    [{}, null],
    [{ groups: [{ name: "lp-admins" }, 42] }, null],
    [{ groups: "lp-admins,staff" }, null],
  ])("%j grants %s (the highest; none maps to no access)", (claims, role) => {
    expect(roleFromClaims(claims, settings)).toBe(role);
  });

  it("reads only the configured claim", () => {
    expect(roleFromClaims({ roles: ["lp-admins"] }, settings)).toBeNull();
    expect(roleFromClaims({ roles: ["lp-admins"] }, { ...settings, roleClaim: "roles" })).toBe(
      "admin",
    );
    expect(claimValues({ groups: ["a", 1, "b"] }, "groups")).toEqual(["a", "b"]);
  });
});

describe("parseRoleMap", () => {
  it("reads value=role pairs and names the entry of a mistake", () => {
    expect(parseRoleMap("a=admin, b c=viewer")).toEqual({
      ok: true,
      grants: [
        { value: "a", role: "admin" },
        { value: "b c", role: "viewer" },
      ],
    });
    expect(parseRoleMap(" , ")).toMatchObject({
      ok: false,
      message: expect.stringContaining("is empty"),
    });
    expect(parseRoleMap("a=admin,=viewer")).toMatchObject({
      ok: false,
      message: expect.stringContaining("entry 2 is not value=role"),
    });
  });
});
