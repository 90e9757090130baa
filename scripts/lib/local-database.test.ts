import { describe, expect, it } from "vitest";
import { assertLocalUrl } from "./local-database";

describe("assertLocalUrl: tests run against this machine only", () => {
  it.each([
    "postgresql://postgres@127.0.0.1:5432/postgres",
    "postgresql://postgres@localhost/postgres",
    "postgresql://postgres@[::1]:5432/postgres",
    "redis://127.0.0.1:6379/0",
  ])("accepts %s", (url) => {
    expect(() => assertLocalUrl("TEST_DATABASE_URL", url)).not.toThrow();
  });

  it("refuses another host, naming the variable and the host", () => {
    expect(() =>
      assertLocalUrl("TEST_DATABASE_URL", "postgresql://admin:secret@db.prod.example.com:5432/app"),
    ).toThrow(
      'Refusing to run the tests against a non-local database: TEST_DATABASE_URL points at host "db.prod.example.com". The tests create and drop databases; use localhost, 127.0.0.1 or ::1.',
    );
    expect(() => assertLocalUrl("TEST_REDIS_URL", "rediss://cache.example.com:6380/0")).toThrow(
      'TEST_REDIS_URL points at host "cache.example.com"',
    );
  });

  it("refuses a host that only looks local, and text that is not a URL", () => {
    expect(() =>
      assertLocalUrl("TEST_DATABASE_URL", "postgresql://u@127.0.0.1.evil.example/db"),
    ).toThrow('points at host "127.0.0.1.evil.example"');
    expect(() => assertLocalUrl("TEST_DATABASE_URL", "not a url")).toThrow(
      "Refusing to run the tests: TEST_DATABASE_URL is not a URL.",
    );
  });

  it("never echoes the password", () => {
    expect(() =>
      assertLocalUrl("TEST_DATABASE_URL", "postgresql://admin:hunter2@db.example.com/app"),
    ).toThrow(expect.objectContaining({ message: expect.not.stringContaining("hunter2") }));
  });
});
