/**
 * The worker thread behind `readPolicyDocument` (read-policy-document.ts): it parses the body's
 * bytes as they are posted to it (json-stream-parser.ts), validates the document with
 * `parsePolicyDocument` and prepares a valid one for its import with `prepareImport` (sorted,
 * compiled, hashed, summarized, its rows written as chunks of JSON text), the same code every
 * other path runs, so that the seconds a document of hundreds of MiB takes are spent off the
 * server's event loop.
 *
 * Messages in: `{ kind: "bytes", bytes }` for each piece of the body, then `{ kind: "end" }`.
 * Messages out: the prepared import's (or the errors') large arrays in parts (`PART_ITEMS` items,
 * or one chunk of text), then the rest in one `prepared` or `invalid` message; or `malformed`
 * (the body is not JSON) as soon as that is seen. Parts keep each message small, so the server
 * takes them in between other requests instead of decoding hundreds of MiB at once.
 */
import { setPriority } from "node:os";
import { parentPort } from "node:worker_threads";
import { parsePolicyDocument } from "@limitplane/enforcer/policy";
import { AppError } from "@/lib/control/errors";
import { type PreparedImport, prepareImport } from "@/lib/control/policy/prepare-import";
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

/** The large arrays sent in parts: the errors, or the prepared import's (its document's overrides). */
export type PartKey = "errors" | "customerOverrides" | "customerChunks" | "entryChunks";

export type PolicyDocumentWorkerOutput =
  | { readonly kind: "part"; readonly key: PartKey; readonly items: readonly unknown[] }
  | { readonly kind: "prepared"; readonly rest: PreparedImport }
  | { readonly kind: "invalid"; readonly errors: readonly never[] }
  | { readonly kind: "malformed"; readonly message: string };

const port = parentPort;
if (port === null) throw new Error("policy-document-worker.ts runs as a worker thread only");

// Elsewhere a process's priority is shared by its threads, and the server's must stay as it is.
if (process.platform === "linux") setPriority(0, WORKER_NICE);

const parser = new JsonStreamParser();
let isFinished = false;

/** Posts `items` in parts of `perPart`; the empty array that stands for them in the answer. */
function postParts(key: PartKey, items: readonly unknown[], perPart: number): never[] {
  for (let start = 0; start < items.length; start += perPart) {
    const part: PolicyDocumentWorkerOutput = {
      kind: "part",
      key,
      items: items.slice(start, start + perPart),
    };
    port?.postMessage(part);
  }
  return [];
}

/** The prepared import, its large arrays posted first, in parts. */
function postPrepared(prepared: PreparedImport): PolicyDocumentWorkerOutput {
  const { document, entries } = prepared;
  return {
    kind: "prepared",
    rest: {
      ...prepared,
      document: {
        ...document,
        customerOverrides: postParts("customerOverrides", document.customerOverrides, PART_ITEMS),
      },
      // A chunk of text is a few hundred KiB already.
      customerChunks: postParts("customerChunks", prepared.customerChunks, 1),
      entries: { ...entries, chunks: postParts("entryChunks", entries.chunks, 1) },
    },
  };
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
        ? postPrepared(prepareImport(parsed.value))
        : { kind: "invalid", errors: postParts("errors", parsed.errors, PART_ITEMS) },
    );
  } catch (error: unknown) {
    // Only the body's own faults are answered here; anything else is a bug, and ends the worker
    // with its error, which the server logs.
    if (!(error instanceof AppError)) throw error;
    answer({ kind: "malformed", message: error.message });
  }
});
