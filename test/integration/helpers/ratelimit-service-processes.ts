/**
 * Real rate-limit service processes (`scripts/ratelimit-service.ts`) on ports the OS picks, a
 * gRPC client built from Envoy's protos, and certificates made with `openssl` for the TLS tests.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { once } from "node:events";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import * as grpc from "@grpc/grpc-js";
import { waitFor } from "@limitplane/enforcer/testing";
import { inject } from "vitest";
import { rateLimitServiceClient } from "@/lib/ratelimit-service/rls-proto";

const ROOT = path.resolve(import.meta.dirname, "../../..");

/** The shared secret the tests' services require on `/check`. */
export const TEST_SECRET = "test-secret-0123456789abcdef0123456789";

export interface ServiceProcess {
  readonly id: string;
  readonly grpcAddress: string;
  readonly httpUrl: string;
  readonly child: ChildProcess;
  stderr(): string;
  stop(): Promise<void>;
}

export interface ServiceOptions {
  readonly prefix: string;
  readonly id: string;
  /** RATELIMIT_SERVICE_* and other variables; plaintext gRPC and the test secret by default. */
  readonly env?: Readonly<Record<string, string>>;
  readonly args?: readonly string[];
}

/** Starts one service and waits until it listens. */
export async function startService(options: ServiceOptions): Promise<ServiceProcess> {
  const child = spawn(
    process.execPath,
    [
      "--conditions=react-server",
      "--import",
      "tsx",
      "scripts/ratelimit-service.ts",
      "--id",
      options.id,
      ...(options.args ?? []),
    ],
    {
      cwd: ROOT,
      env: {
        ...process.env,
        REDIS_URL: inject("redisUrl"),
        REDIS_KEY_PREFIX: options.prefix,
        RATELIMIT_SERVICE_GRPC_PORT: "0",
        RATELIMIT_SERVICE_HTTP_PORT: "0",
        RATELIMIT_SERVICE_GRPC_PLAINTEXT: "true",
        RATELIMIT_SERVICE_SECRET: TEST_SECRET,
        // Each service its own cache file, outside the tree.
        RATELIMIT_SERVICE_POLICY_CACHE: path.join(
          tmpdir(),
          `lp-rls-${options.id}-${process.pid}.lpcache`,
        ),
        ...options.env,
      },
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  let stdout = "";
  let stderr = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const match = await waitFor(
    `service ${options.id} to listen`,
    () => {
      if (child.exitCode !== null) {
        throw new Error(`service ${options.id} exited with ${child.exitCode}: ${stderr}`);
      }
      return / listening on grpc:\/\/(\S+) http=(\S+)/.exec(stdout) ?? undefined;
    },
    // Four processes start at once under tsx; on a machine loaded far beyond its cores that
    // takes more than a minute.
    { timeoutMs: 150_000, intervalMs: 50 },
  );
  return {
    id: options.id,
    grpcAddress: match[1] ?? "",
    httpUrl: match[2] ?? "",
    child,
    stderr: () => stderr,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = once(child, "exit");
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), 5_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** Waits until `/readyz` says a policy is in force. */
export async function waitForReady(service: ServiceProcess): Promise<void> {
  await waitFor(`service ${service.id} to be ready`, async () =>
    (await fetch(`${service.httpUrl}/readyz`)).status === 200 ? true : undefined,
  );
}

/** The RLS response as the client decodes it (proto field names, enums as names). */
export interface RlsReply {
  readonly overall_code: string;
  readonly statuses: {
    readonly code: string;
    readonly current_limit: {
      name: string;
      requests_per_unit: number;
      unit: string | number;
    } | null;
    readonly limit_remaining: number;
    readonly duration_until_reset: { seconds: number; nanos: number } | null;
  }[];
  readonly response_headers_to_add: { key: string; value: string }[];
  readonly raw_body: Buffer;
}

export interface RlsClient {
  shouldRateLimit(request: unknown): Promise<RlsReply>;
  close(): void;
}

/** A client of Envoy's RateLimitService, built from the real protos. */
export function rlsClient(
  address: string,
  credentials: grpc.ChannelCredentials = grpc.credentials.createInsecure(),
): RlsClient {
  const Client = rateLimitServiceClient();
  const client = new Client(address, credentials);
  const method = client.ShouldRateLimit;
  if (typeof method !== "function") throw new Error("no ShouldRateLimit method");
  return {
    shouldRateLimit(request) {
      return new Promise((resolve, reject) => {
        method.call(client, request, (error: grpc.ServiceError | null, reply: RlsReply) =>
          error === null ? resolve(reply) : reject(error),
        );
      });
    },
    close: () => client.close(),
  };
}

/** One `customer_id` (+ `tier`) descriptor request, as an Envoy route would send it. */
export function customerRequest(customerId: string, tier: string, hitsAddend = 0) {
  return {
    domain: "edge",
    hits_addend: hitsAddend,
    descriptors: [
      {
        entries: [
          { key: "customer_id", value: customerId },
          { key: "tier", value: tier },
          { key: "method", value: "GET" },
          { key: "path", value: "/v1/things" },
        ],
      },
    ],
  };
}

/** The headers of a reply, by lowercase name. */
export function replyHeaders(reply: RlsReply): Record<string, string> {
  return Object.fromEntries(
    reply.response_headers_to_add.map((header) => [header.key.toLowerCase(), header.value]),
  );
}

export interface TestCertificates {
  readonly dir: string;
  readonly ca: string;
  readonly serverCert: string;
  readonly serverKey: string;
  readonly clientCert: string;
  readonly clientKey: string;
  /** Signed by another CA: must be refused. */
  readonly strangerCert: string;
  readonly strangerKey: string;
}

/** A CA, a server certificate for 127.0.0.1, a client it signed and a stranger, in a temp dir. */
export function makeTestCertificates(): TestCertificates {
  const dir = mkdtempSync(path.join(tmpdir(), `lp-certs-${randomBytes(3).toString("hex")}-`));
  const file = (name: string) => path.join(dir, name);
  const openssl = (...args: string[]) => execFileSync("openssl", args, { stdio: "pipe" });
  const ca = (name: string) =>
    openssl(
      "req",
      "-x509",
      "-newkey",
      "ec",
      "-pkeyopt",
      "ec_paramgen_curve:prime256v1",
      "-nodes",
      "-keyout",
      file(`${name}.key`),
      "-out",
      file(`${name}.pem`),
      "-days",
      "1",
      "-subj",
      `/CN=${name}`,
    );
  const signed = (name: string, caName: string, extension: string) => {
    writeFileSync(file(`${name}.ext`), `${extension}\n`);
    openssl(
      "req",
      "-newkey",
      "ec",
      "-pkeyopt",
      "ec_paramgen_curve:prime256v1",
      "-nodes",
      "-keyout",
      file(`${name}.key`),
      "-out",
      file(`${name}.csr`),
      "-subj",
      `/CN=${name}`,
    );
    openssl(
      "x509",
      "-req",
      "-in",
      file(`${name}.csr`),
      "-CA",
      file(`${caName}.pem`),
      "-CAkey",
      file(`${caName}.key`),
      "-CAcreateserial",
      "-out",
      file(`${name}.pem`),
      "-days",
      "1",
      "-extfile",
      file(`${name}.ext`),
    );
  };
  ca("test-ca");
  ca("stranger-ca");
  signed("server", "test-ca", "subjectAltName=IP:127.0.0.1,DNS:localhost");
  signed("client", "test-ca", "extendedKeyUsage=clientAuth");
  signed("stranger", "stranger-ca", "extendedKeyUsage=clientAuth");
  return {
    dir,
    ca: file("test-ca.pem"),
    serverCert: file("server.pem"),
    serverKey: file("server.key"),
    clientCert: file("client.pem"),
    clientKey: file("client.key"),
    strangerCert: file("stranger.pem"),
    strangerKey: file("stranger.key"),
  };
}
