import { sha256Hex } from "@limitplane/enforcer/policy";
import { describe, expect, it } from "vitest";
import { hashPassword, needsRehash, verifyPassword } from "./password";
import { can, PERMISSIONS, ROLES } from "./roles";
import { apiTokenPrefix, newApiToken } from "./secret-token";

const FAST = { N: 2 ** 10, r: 8, p: 1 };

describe("password hashing", () => {
  it("verifies the right password and refuses a wrong one", async () => {
    const hash = await hashPassword("correct horse battery", FAST);
    expect(hash).toMatch(/^scrypt\$1024\$8\$1\$[\w-]+\$[\w-]+$/);
    expect(await verifyPassword("correct horse battery", hash)).toBe(true);
    expect(await verifyPassword("correct horse batterz", hash)).toBe(false);
  });

  it("salts every hash", async () => {
    expect(await hashPassword("same", FAST)).not.toBe(await hashPassword("same", FAST));
  });

  it("refuses malformed hashes and absurdly long passwords without throwing", async () => {
    expect(await verifyPassword("x", "plain-text")).toBe(false);
    expect(await verifyPassword("x", "scrypt$0$8$1$aa$bb")).toBe(false);
    const hash = await hashPassword("y".repeat(256), FAST);
    expect(await verifyPassword("y".repeat(257), hash)).toBe(false);
  });

  it("asks for a rehash when the parameters were weaker", async () => {
    expect(needsRehash(await hashPassword("p", FAST))).toBe(true);
    expect(needsRehash("scrypt$32768$8$3$aa$bb")).toBe(false);
  });
});

describe("API tokens", () => {
  it("have a listable prefix and are stored only as a hash", () => {
    const { token, prefix, hash } = newApiToken();
    expect(token.startsWith(`${prefix}_`)).toBe(true);
    expect(apiTokenPrefix(token)).toBe(prefix);
    expect(hash).toBe(sha256Hex(token));
    expect(hash).not.toContain(token.slice(12));
  });

  it("a string that is not shaped like a token has no prefix", () => {
    expect(apiTokenPrefix("lp_short")).toBeNull();
    expect(apiTokenPrefix(`Bearer ${newApiToken().token}`)).toBeNull();
  });
});

describe("roles", () => {
  it.each([
    ["viewer", "policy.read", true],
    ["viewer", "incident.write", false],
    ["operator", "incident.write", true],
    ["operator", "tier.write", false],
    ["admin", "tier.write", true],
    ["admin", "token.manage", true],
  ] as const)("%s may %s: %s", (role, permission, expected) => {
    expect(can(role, permission)).toBe(expected);
  });

  it("admin may do everything and every permission names a real role", () => {
    for (const permission of Object.keys(PERMISSIONS) as (keyof typeof PERMISSIONS)[]) {
      expect(can("admin", permission)).toBe(true);
      expect(ROLES).toContain(PERMISSIONS[permission]);
    }
  });
});
