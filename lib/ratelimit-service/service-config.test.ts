import { describe, expect, it } from "vitest";
import { loadServiceConfig } from "./service-config";

const SECRET = "s".repeat(32);
const files: Record<string, string> = {
  "/c.pem": "CERT",
  "/k.pem": "KEY",
  "/ca.pem": "CA",
};
const readFile = (path: string): Buffer => {
  const text = files[path];
  if (text === undefined) throw new Error("ENOENT: no such file");
  return Buffer.from(text);
};

describe("loadServiceConfig: safe defaults, one line naming the variable", () => {
  it.each([
    [
      "no TLS and no plaintext asked for",
      { RATELIMIT_SERVICE_SECRET: SECRET },
      "RATELIMIT_SERVICE_TLS_CERT gRPC is served over TLS: set RATELIMIT_SERVICE_TLS_CERT and _KEY, or RATELIMIT_SERVICE_GRPC_PLAINTEXT=true for a loopback sidecar or a mesh that encrypts",
    ],
    [
      "neither a secret nor a client CA",
      { RATELIMIT_SERVICE_GRPC_PLAINTEXT: "true" },
      "RATELIMIT_SERVICE_SECRET the forward-auth endpoint spends customers' budgets: set RATELIMIT_SERVICE_SECRET (32+ characters) or RATELIMIT_SERVICE_TLS_CLIENT_CA",
    ],
    [
      "a short secret",
      { RATELIMIT_SERVICE_GRPC_PLAINTEXT: "true", RATELIMIT_SERVICE_SECRET: "short" },
      "RATELIMIT_SERVICE_SECRET must be at least 32 characters",
    ],
    [
      "a certificate without its key",
      { RATELIMIT_SERVICE_TLS_CERT: "/c.pem", RATELIMIT_SERVICE_SECRET: SECRET },
      "RATELIMIT_SERVICE_TLS_KEY set both RATELIMIT_SERVICE_TLS_CERT and RATELIMIT_SERVICE_TLS_KEY, or neither",
    ],
    [
      "a port out of range",
      {
        RATELIMIT_SERVICE_GRPC_PLAINTEXT: "true",
        RATELIMIT_SERVICE_SECRET: SECRET,
        RATELIMIT_SERVICE_GRPC_PORT: "70000",
      },
      "RATELIMIT_SERVICE_GRPC_PORT must be between 0 (any free port) and 65535",
    ],
    [
      "a file that cannot be read",
      {
        RATELIMIT_SERVICE_TLS_CERT: "/missing.pem",
        RATELIMIT_SERVICE_TLS_KEY: "/k.pem",
        RATELIMIT_SERVICE_SECRET: SECRET,
      },
      "RATELIMIT_SERVICE_TLS_CERT: cannot read /missing.pem: ENOENT: no such file",
    ],
    [
      "the old mapping file, which the policy now holds",
      {
        RATELIMIT_SERVICE_GRPC_PLAINTEXT: "true",
        RATELIMIT_SERVICE_SECRET: SECRET,
        RATELIMIT_SERVICE_MAPPING: "/m.json",
      },
      "RATELIMIT_SERVICE_MAPPING is no longer read: the descriptor mapping is part of the policy; edit it in the console (Descriptor mappings) or with PUT /api/v1/descriptor-mappings, then unset this variable",
    ],
    [
      "an outbound wait past an hour",
      {
        RATELIMIT_SERVICE_GRPC_PLAINTEXT: "true",
        RATELIMIT_SERVICE_SECRET: SECRET,
        RATELIMIT_SERVICE_OUTBOUND_MAX_WAIT_MS: "3600001",
      },
      "RATELIMIT_SERVICE_OUTBOUND_MAX_WAIT_MS must be between 0 and 3600000 ms",
    ],
    [
      "an outbound wait that is not a whole number",
      {
        RATELIMIT_SERVICE_GRPC_PLAINTEXT: "true",
        RATELIMIT_SERVICE_SECRET: SECRET,
        RATELIMIT_SERVICE_OUTBOUND_MAX_WAIT_MS: "1.5",
      },
      "RATELIMIT_SERVICE_OUTBOUND_MAX_WAIT_MS must be a whole number of ms",
    ],
  ])("refuses %s", (_name, env, message) => {
    expect(() => loadServiceConfig(env, readFile)).toThrow(message);
  });

  it("mutual TLS alone is enough for forward-auth", () => {
    const config = loadServiceConfig(
      {
        RATELIMIT_SERVICE_TLS_CERT: "/c.pem",
        RATELIMIT_SERVICE_TLS_KEY: "/k.pem",
        RATELIMIT_SERVICE_TLS_CLIENT_CA: "/ca.pem",
        RATELIMIT_SERVICE_SECRET: "",
      },
      readFile,
    );
    expect(config.secret).toBeNull();
    expect(config.tls?.clientCa?.toString()).toBe("CA");
  });

  it("caps outbound waits at 30 s unless told otherwise", () => {
    const base = { RATELIMIT_SERVICE_GRPC_PLAINTEXT: "true", RATELIMIT_SERVICE_SECRET: SECRET };
    expect(loadServiceConfig(base, readFile).outboundMaxWaitMs).toBe(30_000);
    expect(
      loadServiceConfig({ ...base, RATELIMIT_SERVICE_OUTBOUND_MAX_WAIT_MS: "5000" }, readFile)
        .outboundMaxWaitMs,
    ).toBe(5_000);
  });
});
