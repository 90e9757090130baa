/**
 * Reading a policy document for an import without stopping the server. The body is read as it
 * arrives (the media type and the size limit as `readJson` checks them); past its first MiB, its
 * pieces are moved (transferred, not copied) to a worker thread (policy-document-worker.ts), which
 * parses them with the streaming parser, validates the document with `parsePolicyDocument` and
 * prepares it for the import with `prepareImport` (sorted, compiled, hashed, summarized). The
 * event loop only moves bytes and takes the answer back in small parts, so other requests are
 * answered meanwhile, however large the document. A worker per document: imports are rare, and
 * its memory (the parsed document, a few times the body's size) is released with it.
 */
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";
import {
  type ParseResult,
  type PolicyFieldError,
  parsePolicyDocument,
  type TCustomerOverride,
} from "@limitplane/enforcer/policy";
import { AppError } from "@/lib/control/errors";
import { type PreparedImport, prepareImport } from "@/lib/control/policy/prepare-import";
import { JsonStreamParser } from "./json-stream-parser";
import type {
  PartKey,
  PolicyDocumentWorkerInput,
  PolicyDocumentWorkerOutput,
} from "./policy-document-worker";
import { bodyPieces, DEFAULT_MAX_BODY_BYTES, requireJsonContentType } from "./read-json";

export interface ReadPolicyDocumentOptions {
  readonly maxBytes: number;
  /** Told the bytes received so far, after each piece. */
  readonly onProgress?: (bytesRead: number) => void;
}

/**
 * Bodies up to this size are parsed and validated on the event loop, as every other endpoint's
 * body is (read-json.ts `DEFAULT_MAX_BODY_BYTES`): that takes milliseconds, less than starting a
 * worker thread.
 */
const ON_EVENT_LOOP_MAX_BYTES = DEFAULT_MAX_BODY_BYTES;

/**
 * The document validated and prepared for its import, or every problem by its position and field;
 * an AppError (415, 413 or 400) when the body is not a JSON document within the limit.
 */
export async function readPolicyDocument(
  request: Request,
  options: ReadPolicyDocumentOptions,
): Promise<ParseResult<PreparedImport>> {
  requireJsonContentType(request);
  const body = bodyPieces(request, options.maxBytes);
  const head: Uint8Array[] = [];
  let headBytes = 0;
  while (headBytes <= ON_EVENT_LOOP_MAX_BYTES) {
    const next = await body.next();
    if (next.done === true) {
      const parser = new JsonStreamParser();
      for (const piece of head) parser.write(piece);
      const parsed = parsePolicyDocument(parser.end());
      return parsed.ok ? { ok: true, value: prepareImport(parsed.value) } : parsed;
    }
    head.push(next.value);
    headBytes += next.value.byteLength;
  }
  return readInWorker(head, body, options);
}

/** `head`, then the rest of `body`, parsed and validated by a worker thread. */
async function readInWorker(
  head: readonly Uint8Array[],
  body: AsyncGenerator<Uint8Array>,
  options: ReadPolicyDocumentOptions,
): Promise<ParseResult<PreparedImport>> {
  const worker = startWorker();
  try {
    const answer = answerOf(worker);
    let isAnswered = false;
    answer.then(
      () => (isAnswered = true),
      () => (isAnswered = true),
    );
    let bytesRead = 0;
    const send = (piece: Uint8Array) => {
      // A piece that is its buffer's whole is moved to the worker as it is; a view of a larger
      // buffer (which moving would take from its other users) is copied, and the copy moved.
      bytesRead += piece.byteLength;
      const whole = piece.buffer;
      const bytes =
        whole instanceof ArrayBuffer &&
        piece.byteOffset === 0 &&
        piece.byteLength === whole.byteLength
          ? new Uint8Array(whole)
          : new Uint8Array(piece);
      worker.postMessage({ kind: "bytes", bytes } satisfies PolicyDocumentWorkerInput, [
        bytes.buffer,
      ]);
      options.onProgress?.(bytesRead);
    };
    for (const piece of head) send(piece);
    for (;;) {
      // A malformed body is answered as soon as the worker sees it; the rest is not read.
      if (isAnswered) {
        await body.return(undefined);
        break;
      }
      const next = await body.next();
      if (next.done === true) break;
      send(next.value);
    }
    worker.postMessage({ kind: "end" } satisfies PolicyDocumentWorkerInput);
    return await answer;
  } finally {
    void worker.terminate();
  }
}

/**
 * Under Next.js (which sets NEXT_RUNTIME) the worker is bundled with the route: Next.js finds
 * `new Worker(new URL(...))` and builds the worker's own chunk. Run from source (tests, scripts
 * under tsx) it is TypeScript, and Node 20 applies no module hooks in a worker thread, so tsx's
 * require hook loads it there.
 */
function startWorker(): Worker {
  if (process.env.NEXT_RUNTIME !== undefined) {
    return new Worker(new URL("./policy-document-worker.ts", import.meta.url));
  }
  const entry = JSON.stringify(
    path.join(path.dirname(fileURLToPath(import.meta.url)), "policy-document-worker.ts"),
  );
  // In the worker's own code, so that the bundler does not try to bundle tsx.
  const load = `require("node:module").createRequire(${entry})("tsx/cjs/api").require(${entry}, ${entry});`;
  return new Worker(load, { eval: true });
}

/** The worker's answer, its parts joined as they come, one message per turn of the event loop. */
function answerOf(worker: Worker): Promise<ParseResult<PreparedImport>> {
  return new Promise((resolve, reject) => {
    const parts = new Map<PartKey, unknown[]>();
    // What the worker posted: structured cloning keeps plain data, so the types hold.
    const joined = <Item>(key: PartKey) => (parts.get(key) ?? []) as Item[];
    worker.on("message", (message: PolicyDocumentWorkerOutput) => {
      switch (message.kind) {
        case "part": {
          const items = parts.get(message.key);
          if (items === undefined) parts.set(message.key, [...message.items]);
          else for (const item of message.items) items.push(item);
          return;
        }
        case "prepared": {
          const { rest } = message;
          return resolve({
            ok: true,
            value: {
              ...rest,
              document: {
                ...rest.document,
                customerOverrides: joined<TCustomerOverride>("customerOverrides"),
              },
              customerChunks: joined<string>("customerChunks"),
              entries: { ...rest.entries, chunks: joined<string>("entryChunks") },
            },
          });
        }
        case "invalid":
          return resolve({ ok: false, errors: joined<PolicyFieldError>("errors") });
        case "malformed":
          return reject(new AppError("MALFORMED_JSON", message.message));
        default:
          return reject(new Error(`unexpected message from the policy document worker`));
      }
    });
    worker.once("error", reject);
    worker.once("exit", (code) =>
      reject(new Error(`the policy document worker ended (exit code ${code}) before answering`)),
    );
  });
}
