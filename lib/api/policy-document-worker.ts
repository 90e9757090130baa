/**
 * The worker thread behind `readPolicyDocument` (read-policy-document.ts): it parses the body's
 * bytes as they are posted to it (json-stream-parser.ts) and validates the document with
 * `parsePolicyDocument`, the same code every other path runs, so that the seconds a document of
 * hundreds of MiB takes are spent off the server's event loop.
 *
 * Messages in: `{ kind: "bytes", bytes }` for each piece of the body, then `{ kind: "end" }`.
 * Messages out: the document's (or the errors') large arrays in parts of at most `PART_ITEMS`
 * items, then the rest in one `valid` or `invalid` message; or `malformed` (the body is not JSON)
 * as soon as that is seen. Parts keep each message small, so the server takes them in between
 * other requests instead of decoding one object graph of hundreds of MiB at once.
 */
import { setPriority } from "node:os";
import { parentPort } from "node:worker_threads";
import { parsePolicyDocument } from "@limitplane/enforcer/policy";
import { AppError } from "@/lib/control/errors";
import { JsonStreamParser } from "./json-stream-parser";

/** Items per part message (a few hundred KiB of customers). */
const PART_ITEMS = 5_000;
/**
 * The worker's nice value. On Linux it is a thread's own (setpriority(2)), so on a busy machine the
 * server's event loop, at its usual priority, gets the CPU before the import does: the import is
 * bulk work, other requests are people waiting.
 */
const WORKER_NICE = 10;

export type PolicyDocumentWorkerInput =
  | { readonly kind: "bytes"; readonly bytes: Uint8Array }
  | { readonly kind: "end" };

export type PolicyDocumentWorkerOutput =
  | { readonly kind: "part"; readonly key: string; readonly items: readonly unknown[] }
  | { readonly kind: "valid"; readonly rest: Record<string, unknown> }
  | { readonly kind: "invalid"; readonly rest: Record<string, unknown> }
  | { readonly kind: "malformed"; readonly message: string };

const port = parentPort;
if (port === null) throw new Error("policy-document-worker.ts runs as a worker thread only");

// Elsewhere a process's priority is shared by its threads, and the server's must stay as it is.
if (process.platform === "linux") setPriority(0, WORKER_NICE);

const parser = new JsonStreamParser();
let isFinished = false;

/** Posts `record`'s large arrays in parts; the rest of it (those arrays emptied) is returned. */
function postLargeArrays(record: object): Record<string, unknown> {
  const rest: Record<string, unknown> = { ...record };
  for (const [key, value] of Object.entries(rest)) {
    if (!Array.isArray(value) || value.length <= PART_ITEMS) continue;
    for (let start = 0; start < value.length; start += PART_ITEMS) {
      const part: PolicyDocumentWorkerOutput = {
        kind: "part",
        key,
        items: value.slice(start, start + PART_ITEMS),
      };
      port?.postMessage(part);
    }
    rest[key] = [];
  }
  return rest;
}

function answer(message: PolicyDocumentWorkerOutput): void {
  isFinished = true;
  port?.postMessage(message);
}

port.on("message", (message: PolicyDocumentWorkerInput) => {
  if (isFinished) return;
  try {
    if (message.kind === "bytes") {
      parser.write(message.bytes);
      return;
    }
    const parsed = parsePolicyDocument(parser.end());
    answer(
      parsed.ok
        ? { kind: "valid", rest: postLargeArrays(parsed.value) }
        : { kind: "invalid", rest: postLargeArrays({ errors: parsed.errors }) },
    );
  } catch (error: unknown) {
    // Only the body's own faults are answered here; anything else is a bug, and ends the worker
    // with its error, which the server logs.
    if (!(error instanceof AppError)) throw error;
    answer({ kind: "malformed", message: error.message });
  }
});
