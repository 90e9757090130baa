/**
 * `readPolicyDocument` answers what `parsePolicyDocument` and then `prepareImport` answer for the
 * same text (the child process runs those very functions), in order however many parts the
 * answer crosses in, and refuses a body that is not a JSON document within the limit as
 * `readJson` does.
 */
import { createServer, type Server } from "node:http";
import { type AddressInfo, connect } from "node:net";
import example from "@limitplane/enforcer/example-policy.json";
import { parsePolicyDocument } from "@limitplane/enforcer/policy";
import { afterEach, describe, expect, it } from "vitest";
import { AppError } from "@/lib/control/errors";
import { prepareImport } from "@/lib/control/policy/prepare-import";
import { createPeerStamp } from "@/lib/server/console-peer";
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

// Past the first MiB a document is parsed by a child process at a lower priority (nice 10):
// on a busy host its start alone takes seconds, so the suite's 5 s default is no bound here.
describe("readPolicyDocument", { timeout: 60_000 }, () => {
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

/**
 * Through a server made as scripts/console.ts makes one (createPeerStamp), on the import's path:
 * with a declared length the connection is handed to the child process, which reads the body
 * from the socket itself (console-peer.ts `detachBody`); without one the server moves the bytes.
 */
// Each test starts such a child process and moves megabytes through it.
describe("readPolicyDocument through the console's server", { timeout: 60_000 }, () => {
  interface Seen {
    readonly read: Awaited<ReturnType<typeof readPolicyDocument>> | null;
    readonly error: AppError | null;
    /** Anything else the read ended with (the child process ended before answering). */
    readonly failure?: string;
    /** The server's socket's bytes read when the route answered: headers and body alike. */
    readonly serverBytesRead: number;
  }
  const seen: Seen[] = [];
  const servers: Server[] = [];
  afterEach(async () => {
    seen.length = 0;
    await Promise.all(servers.splice(0).map((server) => new Promise((ok) => server.close(ok))));
  });

  /** `requestTimeoutMs`: as scripts/console.ts sets it (server-limits.ts), shorter. */
  async function startConsole(requestTimeoutMs = 60_000): Promise<number> {
    const stamp = createPeerStamp();
    const options = { requestTimeout: requestTimeoutMs, connectionsCheckingInterval: 100 };
    const server = createServer(options, async (incoming, response) => {
      stamp(incoming, response);
      // Next.js hands the route a Request whose body is the Node request, through undici.
      const request = new Request(`http://console.test${incoming.url}`, {
        method: incoming.method,
        headers: incoming.headers as Record<string, string>,
        body: incoming as unknown as ReadableStream,
        duplex: "half",
      } as RequestInit);
      let read: Seen["read"] = null;
      let error: Seen["error"] = null;
      try {
        read = await readPolicyDocument(request, { maxBytes: MAX });
      } catch (caught: unknown) {
        if (!(caught instanceof AppError)) {
          seen.push({ read, error, failure: String(caught), serverBytesRead: 0 });
          return;
        }
        error = caught;
      }
      seen.push({ read, error, serverBytesRead: incoming.socket.bytesRead });
      response.writeHead(error === null ? 200 : 400, { "content-type": "text/plain" });
      response.end(error === null ? "read" : error.message);
    });
    servers.push(server);
    await new Promise<void>((ok) => server.listen(0, "127.0.0.1", ok));
    return (server.address() as AddressInfo).port;
  }

  /** Sends `raw` on a connection of its own (half-closing after it when `end`); what came back. */
  function exchange(port: number, raw: Buffer, end: boolean): Promise<string> {
    return new Promise((resolve, reject) => {
      const socket = connect(port, "127.0.0.1");
      const chunks: Buffer[] = [];
      socket.on("data", (chunk: Buffer) => chunks.push(chunk));
      socket.on("close", () => resolve(Buffer.concat(chunks).toString("latin1")));
      socket.on("error", reject);
      socket.write(raw);
      if (end) socket.end();
    });
  }

  function importRequest(body: Buffer, headers: Record<string, string>): Buffer {
    const head = Object.entries({
      host: "console.test",
      "content-type": "application/json",
      ...headers,
    })
      .map(([name, value]) => `${name}: ${value}\r\n`)
      .join("");
    return Buffer.concat([
      Buffer.from(`POST /api/v1/policy/import?reason=x HTTP/1.1\r\n${head}\r\n`),
      body,
    ]);
  }

  function chunked(body: Buffer): Buffer {
    const pieces: Buffer[] = [];
    for (let start = 0; start < body.byteLength; start += 100_000) {
      const piece = body.subarray(start, start + 100_000);
      pieces.push(Buffer.from(`${piece.byteLength.toString(16)}\r\n`), piece, Buffer.from("\r\n"));
    }
    return Buffer.concat([...pieces, Buffer.from("0\r\n\r\n")]);
  }

  const text = withCustomers(60_000, new Set([12, 59_999]));
  const body = Buffer.from(text);
  const parsed = parsePolicyDocument(JSON.parse(text));

  it("reads a body of declared length in the child, from the socket, and closes the connection", async () => {
    const port = await startConsole();
    const answer = await exchange(
      port,
      importRequest(body, { "content-length": String(body.byteLength) }),
      false,
    );
    const [head = ""] = answer.split("\r\n\r\n", 1);
    expect(head).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    // The server's parser never saw the body's end: the connection cannot carry another request.
    expect(head).toMatch(/\r\nconnection: close(\r\n|$)/i);
    expect(seen).toHaveLength(1);
    expect(seen[0]?.read).toEqual(parsed);
    // The server read the first MiB (parsed on its event loop when the body is that small) and
    // what was in flight; the child read the rest.
    expect(body.byteLength).toBeGreaterThan(3.5 * 1024 * 1024);
    expect(seen[0]?.serverBytesRead).toBeLessThan(body.byteLength / 2);
  });

  it("moves a chunked body itself, with the same answer", async () => {
    const port = await startConsole();
    const answer = await exchange(
      port,
      importRequest(chunked(body), { "transfer-encoding": "chunked", connection: "close" }),
      false,
    );
    expect(answer).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    expect(seen[0]?.read).toEqual(parsed);
    expect(seen[0]?.serverBytesRead).toBeGreaterThan(body.byteLength);
  });

  it("reads nothing past the declared length: bytes after it are not the body", async () => {
    const port = await startConsole();
    const smuggled = Buffer.from("GET /api/v1/tiers HTTP/1.1\r\nhost: console.test\r\n\r\n");
    const answer = await exchange(
      port,
      Buffer.concat([importRequest(body, { "content-length": String(body.byteLength) }), smuggled]),
      false,
    );
    // One answer, the import's; the connection closes after it.
    expect(answer.match(/HTTP\/1\.1 /g)).toHaveLength(1);
    expect(seen).toHaveLength(1);
    expect(seen[0]?.read).toEqual(parsed);
  });

  it("refuses a body that ends before its declared length, naming how much was missing", async () => {
    const port = await startConsole();
    const answer = await exchange(
      port,
      importRequest(body, { "content-length": String(body.byteLength + 1_000) }),
      true,
    );
    expect(answer).toMatch(/^HTTP\/1\.1 400 /);
    expect(answer).toContain(
      "The request body ended 1000 bytes before its declared Content-Length.",
    );
    expect(seen[0]?.error?.code).toBe("MALFORMED_JSON");
  });

  it("ends the child process when a client stalls past the server's request timeout", async () => {
    const port = await startConsole(1_000);
    const declared = 8 * 1024 * 1024;
    // Half the declared body, then nothing: the server's own timeout closes the connection.
    const socket = connect(port, "127.0.0.1");
    socket.on("error", () => {});
    // Read (and drop) what comes back, so that the server's end of the connection is seen.
    socket.resume();
    socket.write(
      importRequest(body.subarray(0, 2 * 1024 * 1024), { "content-length": String(declared) }),
    );
    // Closed by the server (a 408 and its end, or a reset when bytes were left unread).
    await new Promise((closed) => socket.once("close", closed));
    await expect.poll(() => seen.length, { timeout: 30_000 }).toBe(1);
    expect(seen[0]?.failure).toMatch(/ended \(SIGKILL\) before answering/);
  });
});
