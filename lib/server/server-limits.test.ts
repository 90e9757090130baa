import { createServer } from "node:http";
import net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { applyServerLimits, SERVER_LIMITS, serverLimitOptions } from "./server-limits";

const server = createServer(serverLimitOptions(65_000), (_request, response) => {
  response.end("ok");
});
applyServerLimits(server);
let port = 0;

beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  port = (server.address() as net.AddressInfo).port;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

/** Opens a socket, sends `text`, and resolves with what came back once the server closes it. */
function sendAndWaitForClose(text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, "127.0.0.1");
    let received = "";
    socket.on("data", (chunk: Buffer) => {
      received += chunk.toString();
    });
    socket.on("error", reject);
    socket.on("close", () => resolve(received));
    socket.write(text);
  });
}

describe("server limits", () => {
  it("are set on the server", () => {
    expect(server.headersTimeout).toBe(SERVER_LIMITS.headersTimeoutMs);
    expect(server.requestTimeout).toBe(SERVER_LIMITS.requestTimeoutMs);
    expect(server.keepAliveTimeout).toBe(65_000);
    expect(server.maxHeadersCount).toBe(100);
    expect(server.maxConnections).toBe(1_000);
  });

  it("40 slowloris sockets that never finish their headers are each shed with 408", async () => {
    const answers = await Promise.all(
      Array.from({ length: 40 }, () =>
        sendAndWaitForClose("GET / HTTP/1.1\r\nHost: console.test\r\nX-Slow: 1\r\n"),
      ),
    );
    expect(answers.every((answer) => answer.startsWith("HTTP/1.1 408"))).toBe(true);
  }, 60_000);
});
