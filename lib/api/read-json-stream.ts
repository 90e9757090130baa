/**
 * Reading a large JSON body (a policy import, up to hundreds of MiB) without stopping the server:
 * the body is parsed as it arrives, by a streaming parser (`@streamparser/json`, which refuses
 * nothing `JSON.parse` accepts and sets a `"__proto__"` key as an own property, as `JSON.parse`
 * does), in slices of at most `SLICE_CHARS` with a turn of the event loop between slices, so other
 * requests are answered while it runs. The text is never held whole: memory is the parsed value
 * plus one slice. The same rules as `readJson` hold: the media type, the size limit while
 * streaming, strict UTF-8, nesting at most `MAX_JSON_DEPTH`.
 */
import { setImmediate as nextTurn } from "node:timers/promises";
import { JSONParser } from "@streamparser/json";
import { AppError } from "@/lib/control/errors";
import { MAX_JSON_DEPTH, requireJsonContentType, tooLarge } from "./read-json";

/** Characters parsed between two turns of the event loop (about 1-3 ms of parsing). */
export const SLICE_CHARS = 64 * 1024;

export interface ReadJsonStreamOptions {
  readonly maxBytes: number;
  /** Told the bytes read so far, after each slice. */
  readonly onProgress?: (bytesRead: number) => void;
}

/** Tracks nesting across slices, ignoring brackets inside strings (read-json.ts `jsonDepth`). */
class DepthGuard {
  private depth = 0;
  private inString = false;
  private escaped = false;

  feed(text: string): void {
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (this.inString) {
        if (this.escaped) this.escaped = false;
        else if (c === 92 /* \ */) this.escaped = true;
        else if (c === 34 /* " */) this.inString = false;
      } else if (c === 34) this.inString = true;
      else if (c === 123 /* { */ || c === 91 /* [ */) {
        this.depth++;
        if (this.depth > MAX_JSON_DEPTH) {
          throw new AppError(
            "MALFORMED_JSON",
            `The JSON is nested more than ${MAX_JSON_DEPTH} levels deep.`,
          );
        }
      } else if (c === 125 /* } */ || c === 93 /* ] */) this.depth--;
    }
  }
}

function malformed(error: unknown): AppError {
  const detail = error instanceof Error ? error.message : "";
  return new AppError(
    "MALFORMED_JSON",
    `The request body is not valid JSON${detail ? `: ${detail}` : "."}`,
  );
}

/** The parsed body, or an AppError (415, 413 or 400) that names the problem. */
export async function readJsonStreaming(
  request: Request,
  options: ReadJsonStreamOptions,
): Promise<unknown> {
  requireJsonContentType(request);
  const declared = Number(request.headers.get("content-length"));
  if (Number.isFinite(declared) && declared > options.maxBytes) throw tooLarge(options.maxBytes);
  if (request.body === null) {
    throw new AppError("MALFORMED_JSON", "The request body is empty; send a JSON object.");
  }
  const parser = new JSONParser({ paths: ["$"], keepStack: false });
  const root: { value?: unknown } = {};
  parser.onValue = ({ value }) => {
    root.value = value;
  };
  const decoder = new TextDecoder("utf-8", { fatal: true });
  const depth = new DepthGuard();
  let sawText = false;
  const parse = async (text: string) => {
    for (let start = 0; start < text.length; start += SLICE_CHARS) {
      const slice = text.slice(start, start + SLICE_CHARS);
      if (!sawText && slice.trim() !== "") sawText = true;
      depth.feed(slice);
      try {
        parser.write(slice);
      } catch (error: unknown) {
        throw malformed(error);
      }
      await nextTurn();
    }
  };
  const reader = request.body.getReader();
  let total = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      total += value.byteLength;
      if (total > options.maxBytes) throw tooLarge(options.maxBytes);
      let text: string;
      try {
        text = decoder.decode(value, { stream: true });
      } catch {
        throw new AppError("MALFORMED_JSON", "The request body is not valid UTF-8 text.");
      }
      await parse(text);
      options.onProgress?.(total);
    }
  } catch (error: unknown) {
    await reader.cancel().catch(() => {});
    throw error;
  }
  try {
    await parse(decoder.decode());
  } catch (error: unknown) {
    if (error instanceof AppError) throw error;
    throw new AppError("MALFORMED_JSON", "The request body is not valid UTF-8 text.");
  }
  if (!sawText)
    throw new AppError("MALFORMED_JSON", "The request body is empty; send a JSON object.");
  try {
    // The parser ends by itself when the root value closes; a bare number needs telling.
    if (!parser.isEnded) parser.end();
  } catch (error: unknown) {
    throw malformed(error);
  }
  if (!("value" in root)) throw malformed(new Error("the document ended early"));
  return root.value;
}
