/**
 * Reading a policy document for an import without stopping the server. The body is read as it
 * arrives (the media type and the size limit as `readJson` checks them); past its first MiB, its
 * pieces are written to a child process (policy-document-process.ts) as they come, which parses
 * them with the streaming parser, validates the document with `parsePolicyDocument` and prepares
 * it for the import with `prepareImport` (sorted, compiled, hashed, summarized), at a lower CPU
 * priority. Where the console's server can hand the connection over (console-peer.ts
 * `detachBody`: plain HTTP, a declared length), the child reads the rest of the body from the
 * socket itself and the server's event loop never touches those bytes; else the event loop moves
 * them from the socket to the child's stdin. Either way it takes the answer back in small parts,
 * so other requests are answered meanwhile, however large the document. A process per document:
 * imports are rare, and its memory (the parsed document, a few times the body's size) is
 * released with it.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import type { Socket } from "node:net";
import { setPriority } from "node:os";
import path from "node:path";
import type { Writable } from "node:stream";
import { fileURLToPath } from "node:url";
import {
  type ParseResult,
  type PolicyFieldError,
  parsePolicyDocument,
  type TCustomerOverride,
} from "@limitplane/enforcer/policy";
import { AppError } from "@/lib/control/errors";
import { type PreparedImport, prepareImport } from "@/lib/control/policy/prepare-import";
import { type DetachedBody, detachBody } from "@/lib/server/console-peer";
import { JsonStreamParser } from "./json-stream-parser";
import type {
  PartKey,
  PolicyDocumentProcessInput,
  PolicyDocumentProcessOutput,
} from "./policy-document-process";
import { bodyPieces, DEFAULT_MAX_BODY_BYTES, requireJsonContentType } from "./read-json";

export interface ReadPolicyDocumentOptions {
  readonly maxBytes: number;
  /** Told the bytes received so far, after each piece. */
  readonly onProgress?: (bytesRead: number) => void;
}

/**
 * Bodies up to this size are parsed and validated on the event loop, as every other endpoint's
 * body is (read-json.ts `DEFAULT_MAX_BODY_BYTES`): that takes milliseconds, less than starting a
 * child process.
 */
const ON_EVENT_LOOP_MAX_BYTES = DEFAULT_MAX_BODY_BYTES;

/**
 * The child's nice value: on a busy machine the server's event loop, at its usual priority, gets
 * the CPU before the import does. The import is bulk work; other requests are people waiting.
 */
const POLICY_DOCUMENT_NICE = 10;

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
  const { child, stdin } = startChildProcess();
  try {
    const answer = answerOf(child, options);
    const detached = detachBody(request.headers, headBytes);
    if (detached === null) await relay(head, body, { stdin, answer }, options);
    else handOver(head, detached, child);
    return await answer;
  } finally {
    child.kill("SIGKILL");
  }
}

/**
 * Sends `head`, what the server received after it, and the connection to the child, which reads
 * the body's remaining bytes from the socket itself. The server's copy of the socket stays open
 * for the response.
 */
function handOver(head: readonly Uint8Array[], detached: DetachedBody, child: ChildProcess): void {
  const { socket, received, remaining } = detached;
  const message: PolicyDocumentProcessInput = {
    kind: "socket",
    received: [...head, ...received],
    remaining,
  };
  // A server's socket sent to another process is counted as that process's from then on (Node's
  // cluster bookkeeping, which would keep this server's `close` waiting on the child): the
  // socket is shown as nobody's while it is sent. It is sent at once (this child's first
  // handle).
  const owned = socket as Socket & { server?: unknown };
  const { server } = owned;
  owned.server = null;
  try {
    child.send(message, socket, { keepOpen: true });
  } finally {
    owned.server = server;
  }
  // A client that goes away, or a server timeout that closes the connection, ends the child.
  socket.once("close", () => child.kill("SIGKILL"));
}

/** `head`, then the rest of `body`, moved to the child's stdin by this process. */
async function relay(
  head: readonly Uint8Array[],
  body: AsyncGenerator<Uint8Array>,
  { stdin, answer }: { stdin: Writable; answer: Promise<unknown> },
  options: ReadPolicyDocumentOptions,
): Promise<void> {
  let isAnswered = false;
  answer.then(
    () => (isAnswered = true),
    () => (isAnswered = true),
  );
  // A child that ended early closes the pipe; its answer (or its end) says what happened.
  stdin.on("error", () => {});
  let bytesRead = 0;
  const send = async (piece: Uint8Array) => {
    bytesRead += piece.byteLength;
    // Waits while the child is behind (the pipe is full), so the upload waits with it.
    if (!stdin.write(piece)) await Promise.race([once(stdin, "drain"), answer]);
    options.onProgress?.(bytesRead);
  };
  for (const piece of head) await send(piece);
  for (;;) {
    // A malformed body is answered as soon as the child sees it; the rest is not read.
    if (isAnswered) {
      await body.return(undefined);
      break;
    }
    const next = await body.next();
    if (next.done === true) break;
    await send(next.value);
  }
  stdin.end();
}

/**
 * The child runs the TypeScript source under tsx, as `npm start` runs the server (tsx resolved
 * from the working directory, the repository). Under Next.js (which sets NEXT_RUNTIME) the
 * module's own URL is the bundle's, so the source is found from the working directory too.
 */
function startChildProcess(): { child: ChildProcess; stdin: Writable } {
  const entry =
    process.env.NEXT_RUNTIME === undefined
      ? path.join(path.dirname(fileURLToPath(import.meta.url)), "policy-document-process.ts")
      : path.join(process.cwd(), "lib/api/policy-document-process.ts");
  const args = [
    "--conditions=react-server",
    "--import",
    "tsx",
    entry,
    String(POLICY_DOCUMENT_NICE),
  ];
  const child = spawn(process.execPath, args, {
    stdio: ["pipe", "ignore", "inherit", "ipc"],
    serialization: "advanced",
  });
  if (child.stdin === null) throw new Error("the policy document process has no stdin");
  // Niced from its first instruction: Node's start and loading the parser take about 0.45 s of
  // CPU, which at the server's priority slowed the requests answered at an import's start. Its
  // threads, started later, inherit it; the process nices any it finds itself as well.
  if (child.pid !== undefined) {
    try {
      setPriority(child.pid, POLICY_DOCUMENT_NICE);
    } catch {
      // It already ended; its exit is the answer.
    }
  }
  return { child, stdin: child.stdin };
}

/**
 * The child's answer, its parts joined as they come, one message per turn of the event loop;
 * `options.onProgress` told what it read from a socket handed to it.
 */
function answerOf(
  child: ChildProcess,
  options: ReadPolicyDocumentOptions,
): Promise<ParseResult<PreparedImport>> {
  return new Promise((resolve, reject) => {
    const parts = new Map<PartKey, unknown[]>();
    // What the child sent: the advanced serialization (structured cloning) keeps plain data, so
    // the types hold.
    const joined = <Item>(key: PartKey) => (parts.get(key) ?? []) as Item[];
    child.on("message", (message: PolicyDocumentProcessOutput) => {
      switch (message.kind) {
        case "progress":
          return options.onProgress?.(message.bytesRead);
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
          return reject(new Error(`unexpected message from the policy document process`));
      }
    });
    child.once("error", reject);
    child.once("exit", (code, signal) =>
      reject(
        new Error(
          `the policy document process ended (${signal ?? `exit code ${code}`}) before answering`,
        ),
      ),
    );
  });
}
