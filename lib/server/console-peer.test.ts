/**
 * The import routes' bodies through the console's server: a real node:http server stamps each
 * request (createPeerStamp) and its handler reads the body as a route does, from a web Request
 * built over the Node request the way Next.js builds one (bodyPieces in read-json.ts).
 */
import { createServer, request as httpRequest, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { bodyPieces } from "@/lib/api/read-json";
import { AppError } from "@/lib/control/errors";
import { config as proxyConfig } from "@/proxy";
import { createPeerStamp, RAW_BODY_HEADER, RAW_BODY_PATHS, rawBodyOf } from "./console-peer";

interface Read {
  readonly status: number;
  /** What the route saw: whether it read Node's stream, the bytes, or the error's code. */
  readonly seen: {
    readonly raw: boolean;
    readonly bytes?: number;
    readonly sameText?: boolean;
    readonly allBuffers?: boolean;
    readonly error?: string;
    readonly keptAfterClose?: boolean;
  };
}

const servers: ReturnType<typeof createServer>[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => new Promise((ok) => server.close(ok))));
});

/** A server as scripts/console.ts makes one (or, with `stamped` false, any other server). */
async function startServer(stamped: boolean, maxBytes: number): Promise<string> {
  const stamp = createPeerStamp();
  const server = createServer(async (incoming, response) => {
    if (stamped) stamp(incoming, response);
    // Next.js hands the route a Request whose body is the Node request, through undici.
    const request = new Request(`http://console.test${incoming.url}`, {
      method: incoming.method,
      headers: incoming.headers as Record<string, string>,
      body: incoming as unknown as ReadableStream,
      duplex: "half",
    } as RequestInit);
    const raw = rawBodyOf(request.headers);
    let seen: Read["seen"];
    try {
      const pieces: Uint8Array[] = [];
      for await (const piece of bodyPieces(request, maxBytes)) pieces.push(piece);
      const text = Buffer.concat(pieces).toString();
      seen = {
        raw: raw !== null,
        bytes: Buffer.byteLength(text),
        sameText: text === expectedText(Buffer.byteLength(text)),
        allBuffers: pieces.every((piece) => Buffer.isBuffer(piece)),
      };
    } catch (error: unknown) {
      seen = { raw: raw !== null, error: error instanceof AppError ? error.code : String(error) };
    }
    const id = (request.headers.get(RAW_BODY_HEADER) ?? "").split(" ")[1];
    response.once("close", () => {
      // The server forgets the body once its response is done.
      closed.push(rawBodyOf(request.headers) === null && id !== undefined);
    });
    response.writeHead(seen.error === undefined ? 200 : 413, { connection: "close" });
    response.end(JSON.stringify(seen));
  });
  servers.push(server);
  await new Promise<void>((ok) => server.listen(0, "127.0.0.1", ok));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}
const closed: boolean[] = [];

function expectedText(bytes: number): string {
  return `{"customers":"${"x".repeat(bytes - 16)}"}`;
}

/** Posts `bytes` of JSON to `path`, in pieces, without a Content-Length (chunked). */
function post(
  base: string,
  path: string,
  bytes: number,
  headers: Record<string, string> = {},
): Promise<Read> {
  return new Promise((resolve, reject) => {
    const text = expectedText(bytes);
    const request = httpRequest(
      `${base}${path}`,
      { method: "POST", headers: { "content-type": "application/json", ...headers } },
      (response: IncomingMessage) => {
        let body = "";
        response.on("data", (chunk: Buffer) => {
          body += chunk.toString();
        });
        response.on("end", () =>
          resolve({ status: response.statusCode ?? 0, seen: JSON.parse(body) }),
        );
      },
    );
    request.on("error", reject);
    for (let start = 0; start < text.length; start += 64 * 1024) {
      request.write(text.slice(start, start + 64 * 1024));
    }
    request.end();
  });
}

describe("an import's body through the console's server", () => {
  it("reaches the route as Node's Buffers, whole, and is forgotten once answered", async () => {
    const base = await startServer(true, 8 * 1024 * 1024);
    closed.length = 0;
    const read = await post(base, "/api/v1/policy/import?reason=x", 3 * 1024 * 1024 + 5);
    expect(read).toEqual({
      status: 200,
      seen: { raw: true, bytes: 3 * 1024 * 1024 + 5, sameText: true, allBuffers: true },
    });
    await expect.poll(() => closed).toEqual([true]);
  });

  it("is refused past the limit, as the web stream's is", async () => {
    const base = await startServer(true, 1024 * 1024);
    const read = await post(base, "/api/v1/descriptor-rules/import-envoy", 2 * 1024 * 1024);
    expect(read.seen).toEqual({ raw: true, error: "PAYLOAD_TOO_LARGE" });
  });

  it("is read from the web stream on any other path, whatever header the client sends", async () => {
    const base = await startServer(true, 8 * 1024 * 1024);
    const forged = await post(base, "/api/v1/tiers", 200_000, { [RAW_BODY_HEADER]: "guess 1" });
    expect(forged.seen).toMatchObject({ raw: false, bytes: 200_000, sameText: true });
  });

  it("is read from the web stream under another server, where the header cannot be trusted", async () => {
    const stamped = await startServer(true, 8 * 1024 * 1024);
    await post(stamped, "/api/v1/policy/import", 1_000);
    const other = await startServer(false, 8 * 1024 * 1024);
    const forged = await post(other, "/api/v1/policy/import", 200_000, {
      [RAW_BODY_HEADER]: "0123456789abcdef0123456789abcdef 1",
    });
    expect(forged.seen).toMatchObject({ raw: false, bytes: 200_000, sameText: true });
  });
});

describe("the paths whose bodies the server keeps", () => {
  // Next.js reads a body itself, to copy it for the proxy, on every path the proxy runs for.
  it("are the paths the proxy skips, and only those", () => {
    const [matcher] = proxyConfig.matcher;
    const runsFor = new RegExp(`^${matcher}$`);
    for (const path of RAW_BODY_PATHS) expect(runsFor.test(path), path).toBe(false);
    for (const path of ["/api/v1/tiers", "/api/v1/policy/export", "/api/v1/policy/import/x", "/"]) {
      expect(runsFor.test(path), path).toBe(true);
    }
  });
});
