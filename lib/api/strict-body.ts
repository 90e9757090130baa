/**
 * Request bodies are strict objects: an unknown field (a typo, a field of another version) is
 * refused by name instead of ignored. Shared by the console's API and the rate-limit service.
 */
import { z } from "zod";

/** A strict object whose unknown-field message lists the fields it takes. */
export function strictBody<Shape extends z.ZodRawShape>(shape: Shape) {
  const fields = Object.keys(shape).join(", ");
  return z.strictObject(shape, {
    error: (issue) =>
      issue.code === "unrecognized_keys"
        ? `expected only: ${fields}`
        : `expected a JSON object with the fields: ${fields}`,
  });
}
