/**
 * The rate-limit service's servers shed slow and greedy clients: slowloris sockets on gRPC
 * (plaintext and TLS) and HTTP are closed, connections past the cap are refused on accept, a
 * body on /check past its cap is a 413, and a well-behaved call is still answered.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import tls from "node:tls";
import * as grpc from "@grpc/grpc-js";
import type { OutboundLimiter } from "@limitplane/enforcer/callers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SERVER_LIMITS } from "@/lib/server/server-limits";
import type { CheckRequest } from "./decide-descriptors";
import { type RunningGrpcServer, startGrpcServer } from "./grpc-server";
import { MAX_CHECK_BODY_BYTES, type RunningHttpServer, startHttpServer } from "./http-server";
import { rateLimitServiceClient } from "./rls-proto";
import { ServiceMetrics } from "./service-metrics";

const check: CheckRequest = () => {
  throw new Error("no call in these tests reaches a decision");
};

const unreached = () => {
  throw new Error("no call in these tests reaches an outbound budget");
};
const outbound: OutboundLimiter = {
  acquire: unreached,
  schedule: unreached,
  renewSlot: unreached,
  releaseSlot: unreached,
  budgetOf: unreached,
  flush: async () => {},
  close: () => {},
};

function grpcOptions(tlsConfig: { cert: Buffer; key: Buffer } | null) {
  return {
    mapping: { domains: {} },
    check,
    rules: { matchDescriptors: () => [], checkDescriptors: check },
    metrics: new ServiceMetrics(),
    tls: tlsConfig === null ? null : { ...tlsConfig, clientCa: null },
    logError: () => {},
  } as unknown as Parameters<typeof startGrpcServer>[0];
}

/** Resolves with what the server sent once it closes the socket (never: the test times out). */
function heldUntilClosed(socket: net.Socket, text: string): Promise<string> {
  return new Promise((resolve) => {
    let received = "";
    socket.on("data", (chunk: Buffer) => {
      received += chunk.toString("latin1");
    });
    socket.on("error", () => {});
    socket.on("close", () => resolve(received));
    if (text !== "") socket.write(text);
  });
}

const { cert, key } = certificate();

function certificate(): { cert: Buffer; key: Buffer } {
  const dir = mkdtempSync(path.join(tmpdir(), "lp-rls-limits-"));
  execFileSync(
    "openssl",
    [
      "req",
      "-x509",
      "-newkey",
      "ec",
      "-pkeyopt",
      "ec_paramgen_curve:prime256v1",
      "-nodes",
      "-keyout",
      path.join(dir, "key.pem"),
      "-out",
      path.join(dir, "cert.pem"),
      "-days",
      "1",
      "-subj",
      "/CN=127.0.0.1",
    ],
    { stdio: "pipe" },
  );
  return {
    cert: readFileSync(path.join(dir, "cert.pem")),
    key: readFileSync(path.join(dir, "key.pem")),
  };
}

describe("the gRPC server's limits", () => {
  let plain: RunningGrpcServer;
  let secure: RunningGrpcServer;
  let capped: RunningGrpcServer;

  beforeAll(async () => {
    const limits = { idleTimeoutMs: 1_000, handshakeTimeoutMs: 1_000 };
    plain = await startGrpcServer({ ...grpcOptions(null), limits }, "127.0.0.1", 0);
    secure = await startGrpcServer({ ...grpcOptions({ cert, key }), limits }, "127.0.0.1", 0);
    capped = await startGrpcServer(
      { ...grpcOptions(null), limits: { maxConnections: 3 } },
      "127.0.0.1",
      0,
    );
  });

  afterAll(async () => {
    await Promise.all([plain?.stop(), secure?.stop(), capped?.stop()]);
  });

  it("40 plaintext sockets that never finish the HTTP/2 preface, or send nothing, are all closed", async () => {
    const startedMs = Date.now();
    const closed = await Promise.all(
      Array.from({ length: 40 }, (_, index) =>
        heldUntilClosed(
          net.connect(plain.port, "127.0.0.1"),
          index % 2 === 0 ? "PRI * HTTP/2.0\r\n" : "",
        ),
      ),
    );
    expect(closed).toHaveLength(40);
    console.log(`40 gRPC slowloris sockets closed after ${Date.now() - startedMs} ms`);
  }, 30_000);

  it("40 sockets that never finish a TLS handshake are all closed", async () => {
    const closed = await Promise.all(
      Array.from({ length: 40 }, (_, index) =>
        heldUntilClosed(net.connect(secure.port, "127.0.0.1"), index % 2 === 0 ? "\x16\x03" : ""),
      ),
    );
    expect(closed).toHaveLength(40);
  }, 30_000);

  it("a TLS client that finishes its handshake and sends no call is closed when idle", async () => {
    const socket = tls.connect({
      port: secure.port,
      host: "127.0.0.1",
      rejectUnauthorized: false,
      ALPNProtocols: ["h2"],
    });
    await new Promise<void>((resolve) => socket.once("secureConnect", () => resolve()));
    expect(socket.alpnProtocol).toBe("h2");
    await heldUntilClosed(socket as unknown as net.Socket, "");
  }, 30_000);

  it("connections past the cap are closed on accept; those within it are served", async () => {
    const held = Array.from({ length: 3 }, () => net.connect(capped.port, "127.0.0.1"));
    await Promise.all(
      held.map((socket) => new Promise((resolve) => socket.once("connect", resolve))),
    );
    while (
      (await new Promise<number>((resolve, reject) =>
        capped.listener.getConnections((error, count) => (error ? reject(error) : resolve(count))),
      )) < 3
    ) {
      await new Promise((resolve) => setImmediate(resolve));
    }
    const extra = await heldUntilClosed(net.connect(capped.port, "127.0.0.1"), "");
    expect(extra).toBe("");
    for (const socket of held) socket.destroy();
  });

  it("a well-behaved call is answered, over plaintext and over TLS", async () => {
    const Client = rateLimitServiceClient();
    const targets = [
      new Client(`127.0.0.1:${plain.port}`, grpc.credentials.createInsecure()),
      new Client(
        `127.0.0.1:${secure.port}`,
        grpc.credentials.createSsl(cert, null, null, { checkServerIdentity: () => undefined }),
      ),
    ];
    for (const client of targets) {
      const method = client.ShouldRateLimit;
      if (typeof method !== "function") throw new Error("no ShouldRateLimit method");
      const answer = await new Promise<grpc.ServiceError | null>((resolve) => {
        method.call(client, { domain: "", descriptors: [] }, (error: grpc.ServiceError | null) =>
          resolve(error),
        );
      });
      expect(answer?.code).toBe(grpc.status.INVALID_ARGUMENT);
      client.close();
    }
  }, 30_000);
});

describe("the HTTP server's limits", () => {
  let http: RunningHttpServer;

  beforeAll(async () => {
    http = await startHttpServer(
      {
        check,
        outbound,
        outboundMaxWaitMs: 30_000,
        metrics: new ServiceMetrics(),
        forwardAuth: { customerHeader: "x-customer-id", tierHeader: "x-tier" },
        secret: "limits-test-secret-0123456789abcdef",
        tls: null,
        isReady: () => true,
        status: () => ({}),
        prometheus: () => "",
        logError: () => {},
      },
      "127.0.0.1",
      0,
    );
  });

  afterAll(async () => {
    await http?.stop();
  });

  it("are the console's", () => {
    expect(http.server.headersTimeout).toBe(SERVER_LIMITS.headersTimeoutMs);
    expect(http.server.requestTimeout).toBe(SERVER_LIMITS.requestTimeoutMs);
    expect(http.server.maxHeadersCount).toBe(SERVER_LIMITS.maxHeadersCount);
    expect(http.server.maxConnections).toBe(SERVER_LIMITS.maxConnections);
  });

  it("40 slowloris sockets that never finish their headers are each shed with 408", async () => {
    const answers = await Promise.all(
      Array.from({ length: 40 }, () =>
        heldUntilClosed(
          net.connect(http.port, "127.0.0.1"),
          "GET /check HTTP/1.1\r\nHost: rls.test\r\nX-Slow: 1\r\n",
        ),
      ),
    );
    expect(answers.filter((answer) => answer.startsWith("HTTP/1.1 408"))).toHaveLength(40);
  }, 60_000);

  it("a body on /check past the cap is refused with 413, declared or streamed", async () => {
    const declared = await fetch(`${http.url}/check`, {
      method: "POST",
      body: "x".repeat(MAX_CHECK_BODY_BYTES + 1),
    });
    expect(declared.status).toBe(413);
    const streamed = await heldUntilClosed(
      net.connect(http.port, "127.0.0.1"),
      `POST /check HTTP/1.1\r\nHost: rls.test\r\nTransfer-Encoding: chunked\r\n\r\n${(MAX_CHECK_BODY_BYTES + 10).toString(16)}\r\n${"y".repeat(MAX_CHECK_BODY_BYTES + 10)}\r\n0\r\n\r\n`,
    );
    // The 401 may be sent before the body ends; either way the server stops reading and closes.
    expect(streamed).toMatch(/^HTTP\/1\.1 (401|413)/);
  });
});
