/**
 * Reading a JSON request body safely: a size limit enforced while streaming (a lying or missing
 * Content-Length cannot get past it), the media type checked, nesting depth bounded before
 * parsing, and every failure turned into an AppError that says what to fix.
 */
import { AppError } from "@/lib/control/errors";
import { rawBodyOf } from "@/lib/server/console-peer";

/** Policy imports are the largest bodies the API takes. @default 1 MiB */
export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;
/** No legitimate request nests deeper; a hostile one would cost stack and time. */
export const MAX_JSON_DEPTH = 32;

export interface ReadJsonOptions {
  maxBytes?: number;
}

/**
 * The body's pieces as they arrive, refused (413) as soon as they pass `maxBytes`; leaving the
 * loop early cancels the rest of the upload. Read from Node's own stream where the console's
 * server kept it (console-peer.ts `rawBodyOf`: the imports), which passes the received Buffers on
 * as they are; else from `request.body`.
 */
export async function* bodyPieces(request: Request, maxBytes: number): AsyncGenerator<Uint8Array> {
  const declared = Number(request.headers.get("content-length"));
  if (Number.isFinite(declared) && declared > maxBytes) throw tooLarge(maxBytes);
  const raw = rawBodyOf(request.headers);
  if (raw !== null) {
    let total = 0;
    // Leaving the loop early ends the stream, as cancelling the web stream below does.
    for await (const piece of raw as AsyncIterable<Buffer>) {
      total += piece.byteLength;
      if (total > maxBytes) throw tooLarge(maxBytes);
      yield piece;
    }
    return;
  }
  if (request.body === null) return;
  const reader = request.body.getReader();
  let total = 0;
  let isRead = false;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) {
        isRead = true;
        return;
      }
      total += value.byteLength;
      if (total > maxBytes) throw tooLarge(maxBytes);
      yield value;
    }
  } finally {
    if (!isRead) await reader.cancel().catch(() => {});
  }
}

async function readCapped(request: Request, maxBytes: number): Promise<string> {
  const chunks: Uint8Array[] = [];
  let total = 0;
  for await (const chunk of bodyPieces(request, maxBytes)) {
    chunks.push(chunk);
    total += chunk.byteLength;
  }
  const bytes = new Uint8Array(total);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.byteLength;
  }
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    throw new AppError("MALFORMED_JSON", "The request body is not valid UTF-8 text.");
  }
}

export function tooLarge(maxBytes: number): AppError {
  return new AppError(
    "PAYLOAD_TOO_LARGE",
    `The request body is larger than the limit of ${Math.round(maxBytes / 1024)} KiB.`,
    { details: { maxBytes } },
  );
}

/** Deepest nesting of arrays and objects in `text`, ignoring brackets inside strings. */
export function jsonDepth(text: string): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 92 /* \ */) i++;
      else if (c === 34 /* " */) inString = false;
    } else if (c === 34) inString = true;
    else if (c === 123 /* { */ || c === 91 /* [ */) {
      depth++;
      if (depth > deepest) deepest = depth;
    } else if (c === 125 /* } */ || c === 93 /* ] */) depth--;
  }
  return deepest;
}

/** Refuses a body that is not declared as JSON (415). */
export function requireJsonContentType(request: Request): void {
  const contentType = request.headers.get("content-type") ?? "";
  if (!/^application\/(?:[\w.+-]+\+)?json\s*(?:;|$)/i.test(contentType)) {
    throw new AppError(
      "UNSUPPORTED_MEDIA_TYPE",
      `Send the body as JSON with "Content-Type: application/json"${contentType ? ` (got "${contentType.slice(0, 60)}")` : ""}.`,
    );
  }
}

/** The parsed body, or an AppError (415, 413 or 400) that names the problem. */
export async function readJson(request: Request, options: ReadJsonOptions = {}): Promise<unknown> {
  requireJsonContentType(request);
  const text = await readCapped(request, options.maxBytes ?? DEFAULT_MAX_BODY_BYTES);
  if (text.trim() === "")
    throw new AppError("MALFORMED_JSON", "The request body is empty; send a JSON object.");
  if (jsonDepth(text) > MAX_JSON_DEPTH) {
    throw new AppError(
      "MALFORMED_JSON",
      `The JSON is nested more than ${MAX_JSON_DEPTH} levels deep.`,
    );
  }
  try {
    return JSON.parse(text);
  } catch (error: unknown) {
    const detail = error instanceof SyntaxError ? error.message.replace(/^JSON\.parse: /, "") : "";
    throw new AppError(
      "MALFORMED_JSON",
      `The request body is not valid JSON${detail ? `: ${detail}` : "."}`,
    );
  }
}
