import { describe, expect, it } from "vitest";
import { Prisma } from "@/lib/generated/prisma/client";
import { AppError } from "./errors";
import { isRetryableTransactionError, translateDbError } from "./prisma-errors";

function prismaError(code: string, cause: Record<string, unknown> = {}) {
  return new Prisma.PrismaClientKnownRequestError("failed", {
    code,
    clientVersion: "7",
    meta: { driverAdapterError: { name: "DriverAdapterError", cause } },
  });
}

describe("translateDbError", () => {
  const subject = { entity: "Tier", key: "pro" };

  it("a duplicate key is a CONFLICT naming the field", () => {
    const error = translateDbError(prismaError("P2002"), subject);
    expect(error).toBeInstanceOf(AppError);
    expect(error).toMatchObject({
      code: "CONFLICT",
      message: 'Tier "pro" already exists; choose another name or edit the existing one.',
      fieldErrors: [{ path: "name", message: '"pro" is already taken' }],
    });
  });

  it("a missing row is NOT_FOUND; a row still referenced is a CONFLICT naming the constraint", () => {
    expect(translateDbError(prismaError("P2025"), subject)).toMatchObject({
      code: "NOT_FOUND",
      message: 'Tier "pro" does not exist.',
    });
    expect(
      translateDbError(
        prismaError("P2003", { constraint: { index: "Customer_tier_fkey" } }),
        subject,
      ),
    ).toMatchObject({ code: "CONFLICT", message: expect.stringContaining("(Customer_tier_fkey)") });
  });

  it("anything else is returned unchanged", () => {
    const other = prismaError("P2010");
    expect(translateDbError(other, subject)).toBe(other);
    const plain = new Error("connection refused");
    expect(translateDbError(plain, subject)).toBe(plain);
  });
});

describe("isRetryableTransactionError", () => {
  it.each([
    ["Prisma's write conflict", prismaError("P2034"), true],
    [
      "a serialization failure",
      prismaError("P2010", { originalCode: "40001", kind: "TransactionWriteConflict" }),
      true,
    ],
    ["a deadlock", prismaError("P2010", { originalCode: "40P01", kind: "postgres" }), true],
    [
      "another database error",
      prismaError("P2010", { originalCode: "22012", kind: "postgres" }),
      false,
    ],
    ["an error that is not Prisma's", new Error("40001"), false],
  ])("%s: retryable %s", (_name, error, retryable) => {
    expect(isRetryableTransactionError(error)).toBe(retryable);
  });
});
