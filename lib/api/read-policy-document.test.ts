/**
 * `readPolicyDocument` answers what `parsePolicyDocument` and then `prepareImport` answer for the
 * same text (the child process runs those very functions), in order however many parts the
 * answer crosses in, and refuses a body that is not a JSON document within the limit as
 * `readJson` does.
 */
import example from "@limitplane/enforcer/example-policy.json";
import { parsePolicyDocument } from "@limitplane/enforcer/policy";
import { describe, expect, it } from "vitest";
import { AppError } from "@/lib/control/errors";
import { prepareImport } from "@/lib/control/policy/prepare-import";
import { readPolicyDocument } from "./read-policy-document";

const MAX = 8 * 1024 * 1024;

function post(
  body: BodyInit | null,
  headers: Record<string, string> = { "content-type": "application/json" },
): Request {
  return new Request("http://test.local/api", { method: "POST", body, headers });
}

/** A body that arrives in the given pieces, as a slow upload does (no declared size). */
function streamed(pieces: readonly string[]): Request {
  const encoder = new TextEncoder();
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      for (const piece of pieces) controller.enqueue(encoder.encode(piece));
      controller.close();
    },
  });
  return new Request("http://test.local/api", {
    method: "POST",
    body,
    headers: { "content-type": "application/json" },
    duplex: "half",
  } as RequestInit);
}

/** The example with `count` customers more; those at `badIndexes` on a tier that does not exist. */
function withCustomers(count: number, badIndexes: ReadonlySet<number> = new Set()): string {
  const customers = Array.from({ length: count }, (_, index) => ({
    id: `bulk-${index}`,
    displayName: `Bulk customer ${index}`,
    tier: badIndexes.has(index) ? "no-such-tier" : "free",
  }));
  return JSON.stringify({ ...example, customers: [...example.customers, ...customers] });
}

async function failure(request: Request, maxBytes = MAX): Promise<AppError> {
  try {
    await readPolicyDocument(request, { maxBytes });
  } catch (error: unknown) {
    if (error instanceof AppError) return error;
    throw error;
  }
  throw new Error("expected readPolicyDocument to fail");
}

describe("readPolicyDocument", () => {
  it.each([
    ["the example policy, on the event loop", JSON.stringify(example)],
    [
      "a document whose customers cross from the child process in many parts",
      withCustomers(30_000),
    ],
    ["a document with one problem deep in it", withCustomers(30_000, new Set([29_000]))],
    [
      "a document whose problems cross from the child process in many parts",
      withCustomers(30_000, new Set(Array.from({ length: 25_000 }, (_, index) => index))),
    ],
  ])("answers %s as parsePolicyDocument and prepareImport do", async (_label, text) => {
    const read = await readPolicyDocument(post(text), { maxBytes: MAX });
    const parsed = parsePolicyDocument(JSON.parse(text));
    expect(read).toEqual(parsed.ok ? { ok: true, value: prepareImport(parsed.value) } : parsed);
  });

  it("reports the position of a problem in a body that arrives in pieces", async () => {
    const text = withCustomers(100, new Set([99]));
    const pieces = text.match(/[\s\S]{1,997}/g) ?? [];
    const read = await readPolicyDocument(streamed(pieces), { maxBytes: MAX });
    expect(read.ok ? [] : read.errors.map((error) => error.path)).toEqual([
      ["customers", example.customers.length + 99, "tier"],
    ]);
  });

  it.each([
    ["no content type", post("{}", {}), "UNSUPPORTED_MEDIA_TYPE", "Content-Type"],
    ["an empty body", post(""), "MALFORMED_JSON", "empty"],
    ["malformed JSON", post('{"tiers":['), "MALFORMED_JSON", "not valid JSON"],
    [
      "malformed JSON past the first MiB, in the child process",
      post(`{"customers":[${'"x",'.repeat(400_000)}}`),
      "MALFORMED_JSON",
      "not valid JSON",
    ],
    ["invalid UTF-8", post(new Uint8Array([0x7b, 0xff, 0x7d])), "MALFORMED_JSON", "UTF-8"],
    ["a declared size over the limit", post("x".repeat(MAX + 1)), "PAYLOAD_TOO_LARGE", "limit"],
    [
      "a body without a declared size that streams past the limit",
      streamed(['{"a":"', "x".repeat(MAX / 2), "x".repeat(MAX / 2), '"}']),
      "PAYLOAD_TOO_LARGE",
      "limit",
    ],
  ])("refuses %s", async (_label, request, code, message) => {
    const error = await failure(request);
    expect(error.code).toBe(code);
    expect(error.message).toContain(message);
  });
});
