import type { IncomingMessage } from "node:http";
import { describe, expect, it } from "vitest";
import { requestOriginOf } from "./client-address";
import { createPeerStamp, PEER_HEADER } from "./console-peer";

/** A request as the console's server hands it on: stamped with the connection's peer. */
function throughConsoleServer(
  peer: { address: string; tls?: boolean },
  headers: Record<string, string> = {},
): Request {
  const incoming = {
    headers: { ...headers },
    socket: { remoteAddress: peer.address, encrypted: peer.tls === true },
  } as unknown as IncomingMessage;
  createPeerStamp()(incoming);
  return new Request("http://console.test/api/v1/auth/sign-in", {
    headers: incoming.headers as Record<string, string>,
  });
}

describe("requestOriginOf behind the console's server", () => {
  it.each([
    [
      "trusts no proxy by default: a forged X-Forwarded-For changes nothing",
      0,
      { address: "203.0.113.9" },
      { "x-forwarded-for": "6.6.6.6", "x-forwarded-proto": "https" },
      { address: "203.0.113.9", isHttps: false, host: null },
    ],
    [
      "the connection's TLS, directly",
      0,
      { address: "203.0.113.9", tls: true },
      {},
      { address: "203.0.113.9", isHttps: true, host: null },
    ],
    [
      "one trusted proxy: the entry it appended, and the scheme it wrote",
      1,
      { address: "10.0.0.2" },
      { "x-forwarded-for": "6.6.6.6, 198.51.100.7", "x-forwarded-proto": "https" },
      { address: "198.51.100.7", isHttps: true, host: null },
    ],
    [
      "two trusted proxies: the second entry from the right",
      2,
      { address: "10.0.0.2" },
      { "x-forwarded-for": "6.6.6.6, 198.51.100.7, 10.0.0.9" },
      { address: "198.51.100.7", isHttps: false, host: null },
    ],
    [
      "a request that skipped the proxy is known by its connection",
      2,
      { address: "192.0.2.50" },
      { "x-forwarded-for": "6.6.6.6" },
      { address: "192.0.2.50", isHttps: false, host: null },
    ],
    [
      "IPv4 on a dual stack, by its IPv4 address",
      0,
      { address: "::ffff:127.0.0.1" },
      {},
      { address: "127.0.0.1", isHttps: false, host: null },
    ],
    [
      "IPv6 by its /64",
      0,
      { address: "2001:db8:0:1::5" },
      {},
      { address: "2001:db8:0:1::/64", isHttps: false, host: null },
    ],
  ] as const)("%s", (_label, trustProxy, peer, headers, expected) => {
    expect(requestOriginOf(throughConsoleServer(peer, headers), trustProxy)).toEqual(expected);
  });

  it("with no proxy trusted, a client's own X-Forwarded-Proto and X-Forwarded-Host change nothing", () => {
    const origin = requestOriginOf(
      throughConsoleServer(
        { address: "203.0.113.9", tls: true },
        {
          host: "console.example.com",
          "x-forwarded-proto": "http",
          "x-forwarded-host": "evil.example",
        },
      ),
      0,
    );
    expect(origin).toEqual({ address: "203.0.113.9", isHttps: true, host: "console.example.com" });
  });

  it("behind trusted proxies, the nearest proxy's (last) scheme and host count", () => {
    const origin = requestOriginOf(
      throughConsoleServer(
        { address: "10.0.0.2" },
        {
          host: "10.0.0.5:3000",
          "x-forwarded-for": "198.51.100.7",
          "x-forwarded-proto": "http, https",
          "x-forwarded-host": "evil.example, Console.Example.com",
        },
      ),
      1,
    );
    expect(origin).toEqual({ address: "198.51.100.7", isHttps: true, host: "console.example.com" });
  });

  it("replaces a peer header the client sent, and ignores one with a wrong key", () => {
    const stamped = throughConsoleServer(
      { address: "203.0.113.9" },
      { [PEER_HEADER]: "forged https 6.6.6.6" },
    );
    expect(requestOriginOf(stamped, 0).address).toBe("203.0.113.9");
    const forged = new Request("http://console.test/", {
      headers: { [PEER_HEADER]: "0123456789abcdef0123456789abcdef https 6.6.6.6" },
    });
    expect(requestOriginOf(forged, 0)).toEqual({ address: null, isHttps: false, host: null });
  });
});

describe("requestOriginOf without the console's server (next dev, handler tests)", () => {
  it.each([
    ["the address Next.js filled in", { "x-forwarded-for": "10.1.2.3" }, "10.1.2.3"],
    ["the last entry of a chain", { "x-forwarded-for": "6.6.6.6, 10.1.2.3" }, "10.1.2.3"],
    ["nothing", {}, null],
    ["garbage", { "x-forwarded-for": "not an address" }, null],
  ] as const)("%s", (_label, headers, expected) => {
    expect(requestOriginOf(new Request("http://localhost/x", { headers }), 0).address).toBe(
      expected,
    );
  });
});
