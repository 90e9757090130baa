/**
 * Test data: the example policy and small builders. Every call returns fresh objects, so a test can
 * change what it gets without affecting another.
 */

import example from "../policy/fixtures/example-policy.json" with { type: "json" };
import type { TSnapshot } from "../policy/schemas";
import {
  type TPolicyDocument,
  type TPolicyDocumentInput,
  ZPolicyDocument,
} from "../policy/schemas";
import { compileSnapshot } from "../policy/snapshot";

/** A token bucket: `capacity` burst, `refillPerSec` sustained. */
export function tokenBucket(capacity: number, refillPerSec: number) {
  return { algorithm: "token-bucket" as const, capacity, refillPerSec };
}

/**
 * The example policy as written (input form), deep-copied. The JSON import's types widen literals
 * like "token-bucket" to string, hence the assertion; every test parses what it gets.
 */
export function examplePolicyInput(): TPolicyDocumentInput {
  return structuredClone(example) as TPolicyDocumentInput;
}

/** The example policy, parsed, after `edit` changed its input form. */
export function examplePolicy(
  edit: (input: TPolicyDocumentInput) => void = () => {},
): TPolicyDocument {
  const input = examplePolicyInput();
  edit(input);
  return ZPolicyDocument.parse(input);
}

/** The example policy compiled, after `edit`. */
export function exampleSnapshot(
  edit: (input: TPolicyDocumentInput) => void = () => {},
  options: { version?: number; compiledAt?: string } = {},
): TSnapshot {
  return compileSnapshot(examplePolicy(edit), {
    version: options.version ?? 7,
    compiledAt: options.compiledAt ?? "2025-06-01T00:00:00.000Z",
  });
}
