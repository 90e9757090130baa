/**
 * Parsing a large JSON body (a policy import, up to hundreds of MiB) piece by piece as it arrives,
 * by a streaming parser (`@streamparser/json`, which refuses nothing `JSON.parse` accepts and sets
 * a `"__proto__"` key as an own property, as `JSON.parse` does). The text is never held whole:
 * memory is the parsed value plus one piece. The same rules as `readJson` hold: strict UTF-8,
 * nesting at most `MAX_JSON_DEPTH`, an empty body refused. The parsing itself is synchronous; a
 * policy import runs it in a child process (policy-document-process.ts), off the event loop.
 */
import { JSONParser } from "@streamparser/json";
import { AppError } from "@/lib/control/errors";
import { MAX_JSON_DEPTH } from "./read-json";

/** Tracks nesting across pieces, ignoring brackets inside strings (read-json.ts `jsonDepth`). */
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

/**
 * One JSON document fed as bytes in pieces split anywhere (a multi-byte character included):
 * `write` each piece, then `end` for the value. Both throw an AppError (MALFORMED_JSON) that names
 * the problem as soon as it is seen.
 */
export class JsonStreamParser {
  private readonly parser = new JSONParser({ paths: ["$"], keepStack: false });
  private readonly root: { value?: unknown } = {};
  private readonly decoder = new TextDecoder("utf-8", { fatal: true });
  private readonly depth = new DepthGuard();
  private sawText = false;

  constructor() {
    this.parser.onValue = ({ value }) => {
      this.root.value = value;
    };
  }

  write(bytes: Uint8Array): void {
    this.parseText(this.decode(bytes, true));
  }

  end(): unknown {
    this.parseText(this.decode(undefined, false));
    if (!this.sawText)
      throw new AppError("MALFORMED_JSON", "The request body is empty; send a JSON object.");
    try {
      // The parser ends by itself when the root value closes; a bare number needs telling.
      if (!this.parser.isEnded) this.parser.end();
    } catch (error: unknown) {
      throw malformed(error);
    }
    if (!("value" in this.root)) throw malformed(new Error("the document ended early"));
    return this.root.value;
  }

  private decode(bytes: Uint8Array | undefined, stream: boolean): string {
    try {
      return this.decoder.decode(bytes, { stream });
    } catch {
      throw new AppError("MALFORMED_JSON", "The request body is not valid UTF-8 text.");
    }
  }

  private parseText(text: string): void {
    if (text === "") return;
    if (!this.sawText && text.trim() !== "") this.sawText = true;
    this.depth.feed(text);
    try {
      this.parser.write(text);
    } catch (error: unknown) {
      throw malformed(error);
    }
  }
}
