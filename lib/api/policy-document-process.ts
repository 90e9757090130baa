/**
 * The child process behind `readPolicyDocument` (read-policy-document.ts): it parses the body's
 * bytes as they arrive on its stdin (json-stream-parser.ts), validates the document with
 * `parsePolicyDocument` and prepares a valid one for its import with `prepareImport` (sorted,
 * compiled, hashed, summarized, its rows written as chunks of JSON text), the same code every
 * other path runs, so that the seconds a document of hundreds of MiB takes are spent outside the
 * server's process, at a lower CPU priority.
 *
 * A process, not a worker thread: a worker's garbage collection and compilation run on the V8
 * helper threads it shares with the server, at the server's priority, so a third of a large
 * parse's CPU time competed with the event loop as an equal however the worker thread itself
 * was niced (bench/results/import.md). Every thread of this process is niced.
 *
 * Argument: the nice value every thread of it runs at (the server sets the main thread's as soon
 * as it starts it). In: the body's bytes on stdin, its end the body's end; or one `socket` message over the IPC
 * channel with the connection itself (console-peer.ts `detachBody`): the bytes the server already
 * had, then exactly `remaining` bytes read from the socket, which is left open for the server's
 * answer. Out, over the IPC channel (advanced
 * serialization): the prepared import's (or the errors') large arrays in parts (`PART_ITEMS`
 * items, or one chunk of text), then the rest in one `prepared` or `invalid` message; or
 * `malformed` (the body is not JSON) as soon as that is seen. Parts keep each message small, so
 * the server takes them in between other requests instead of decoding hundreds of MiB at once.
 * The server ends the process once it has its answer.
 */
import { readdirSync } from "node:fs";
import type { Socket } from "node:net";
import { setPriority } from "node:os";
import { parsePolicyDocument } from "@limitplane/enforcer/policy";
import { AppError } from "@/lib/control/errors";
import { type PreparedImport, prepareImport } from "@/lib/control/policy/prepare-import";
import { JsonStreamParser } from "./json-stream-parser";

/** How often a read from a socket is reported (`progress`), in bytes. */
const PROGRESS_BYTES = 16 * 1024 * 1024;
/** Items per part message (a few hundred KiB of customers). */
const PART_ITEMS = 5_000;
/** The process's nice value, given by the server (read-policy-document.ts `POLICY_DOCUMENT_NICE`). */
const PROCESS_NICE = Number(process.argv[2] ?? 10);

/** The large arrays sent in parts: the errors, or the prepared import's (its document's overrides). */
export type PartKey = "errors" | "customerOverrides" | "customerChunks" | "entryChunks";

/** Sent with the connection as its handle. */
export type PolicyDocumentProcessInput = {
  readonly kind: "socket";
  readonly received: readonly Uint8Array[];
  readonly remaining: number;
};

export type PolicyDocumentProcessOutput =
  | { readonly kind: "progress"; readonly bytesRead: number }
  | { readonly kind: "part"; readonly key: PartKey; readonly items: readonly unknown[] }
  | { readonly kind: "prepared"; readonly rest: PreparedImport }
  | { readonly kind: "invalid"; readonly errors: readonly never[] }
  | { readonly kind: "malformed"; readonly message: string };

/**
 * Nices every thread this process has. On Linux a nice value is a thread's own (setpriority(2)
 * on a thread id), and Node starts its helper threads before any script runs; threads started
 * later inherit it from the thread that starts them. Elsewhere it is the process's.
 */
function lowerPriority(): void {
  if (process.platform !== "linux") setPriority(0, PROCESS_NICE);
  else for (const tid of readdirSync("/proc/self/task")) setPriority(Number(tid), PROCESS_NICE);
}

function send(message: PolicyDocumentProcessOutput): void {
  if (process.send === undefined) {
    throw new Error("policy-document-process.ts runs as a child process with an IPC channel only");
  }
  process.send(message);
}

/** Posts `items` in parts of `perPart`; the empty array that stands for them in the answer. */
function sendParts(key: PartKey, items: readonly unknown[], perPart: number): never[] {
  for (let start = 0; start < items.length; start += perPart) {
    send({ kind: "part", key, items: items.slice(start, start + perPart) });
  }
  return [];
}

/** The prepared import, its large arrays sent first, in parts. */
function sendPrepared(prepared: PreparedImport): PolicyDocumentProcessOutput {
  const { document, entries } = prepared;
  return {
    kind: "prepared",
    rest: {
      ...prepared,
      document: {
        ...document,
        customerOverrides: sendParts("customerOverrides", document.customerOverrides, PART_ITEMS),
      },
      // A chunk of text is a few hundred KiB already.
      customerChunks: sendParts("customerChunks", prepared.customerChunks, 1),
      entries: { ...entries, chunks: sendParts("entryChunks", entries.chunks, 1) },
    },
  };
}

lowerPriority();
const parser = new JsonStreamParser();
let isFinished = false;

/** Runs `step`; a body that is not JSON is answered, anything else is a bug and ends the process. */
function answering(step: () => PolicyDocumentProcessOutput | null): void {
  if (isFinished) return;
  try {
    const answer = step();
    if (answer === null) return;
    isFinished = true;
    send(answer);
  } catch (error: unknown) {
    // Only the body's own faults are answered; anything else ends the process with its error on
    // stderr (the server's), and the server answers 500.
    if (!(error instanceof AppError)) throw error;
    isFinished = true;
    send({ kind: "malformed", message: error.message });
  }
}

function write(bytes: Uint8Array): void {
  answering(() => {
    parser.write(bytes);
    return null;
  });
}

function finish(): void {
  answering(() => {
    const parsed = parsePolicyDocument(parser.end());
    return parsed.ok
      ? sendPrepared(prepareImport(parsed.value))
      : { kind: "invalid", errors: sendParts("errors", parsed.errors, PART_ITEMS) };
  });
}

/**
 * Reads exactly `remaining` bytes from `socket`, after `received`. The socket is the server's
 * connection: this process never writes to it or shuts it down (closing its own descriptor
 * leaves the server's open), and reads nothing past the body.
 */
function readFromSocket({ received, remaining }: PolicyDocumentProcessInput, socket: Socket): void {
  // A client that half-closes after its body must not make Node end the server's side.
  socket.allowHalfOpen = true;
  let bytesRead = 0;
  let reported = 0;
  const take = (bytes: Uint8Array) => {
    bytesRead += bytes.byteLength;
    write(bytes);
    if (bytesRead - reported >= PROGRESS_BYTES) {
      reported = bytesRead;
      send({ kind: "progress", bytesRead });
    }
  };
  for (const piece of received) take(piece);
  let left = remaining;
  const done = () => {
    socket.off("data", onData);
    socket.destroy();
    finish();
  };
  const onData = (bytes: Buffer) => {
    const piece = bytes.byteLength > left ? bytes.subarray(0, left) : bytes;
    left -= piece.byteLength;
    take(piece);
    if (left === 0) done();
  };
  if (left === 0) {
    done();
    return;
  }
  socket.on("data", onData);
  socket.once("end", () =>
    answering(() => {
      throw new AppError(
        "MALFORMED_JSON",
        `The request body ended ${left} bytes before its declared Content-Length.`,
      );
    }),
  );
  socket.on("error", () => {});
}

process.stdin.on("data", write);
process.stdin.on("end", finish);
process.on("message", (message: PolicyDocumentProcessInput, socket?: Socket) => {
  if (message.kind === "socket" && socket !== undefined) readFromSocket(message, socket);
});
// A server that ended without ending this process.
process.on("disconnect", () => process.exit(0));
