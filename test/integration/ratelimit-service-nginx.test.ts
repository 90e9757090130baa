/**
 * nginx from Debian's package in front of a demo upstream, asking one rate-limit service with
 * `auth_request`, configured by docs/nginx-ratelimit.conf as it is (ports and secret replaced).
 * The test runs its own nginx (`-p <dir> -c <conf> -e stderr`, `daemon off`) on free ports.
 * Without nginx it skips loudly; with CI set, a missing nginx fails the run.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { Agent, createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import path from "node:path";
import type { TPolicyDocumentInput } from "@limitplane/enforcer/policy";
import {
  checkRateLimitContract,
  publishTestSnapshot,
  tokenBucket,
} from "@limitplane/enforcer/testing";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import {
  filePrefix,
  freePort,
  type GatewayProcess,
  type Reply,
  sendRequest,
  waitFor,
} from "./helpers/gateway-processes";
import {
  type ServiceProcess,
  startService,
  TEST_SECRET,
  waitForReady,
} from "./helpers/ratelimit-service-processes";
import { snapshotVersion } from "./helpers/snapshots";

const ROOT = path.resolve(import.meta.dirname, "../..");
const DOCUMENTED = path.join(ROOT, "docs/nginx-ratelimit.conf");

function findNginx(): string | null {
  for (const candidate of ["/usr/sbin/nginx", "/usr/bin/nginx"]) {
    try {
      execFileSync(candidate, ["-v"], { stdio: "ignore" });
      return candidate;
    } catch {
      // Not there; try the next.
    }
  }
  return null;
}

const nginxBinary = findNginx();
if (nginxBinary === null) {
  if (process.env.CI) throw new Error("nginx is not installed: .ci/run installs Debian's nginx");
  console.warn(
    "\n*** SKIPPING the nginx auth_request test: nginx is not installed (apt-get install nginx) ***\n",
  );
}

/** The documented configuration, pointed at this test's ports and secret. */
function nginxConfig(dir: string, ports: { nginx: number; app: number; service: number }): string {
  const documented = readFileSync(DOCUMENTED, "utf8");
  const replace = (text: string, from: string, to: string) => {
    if (!text.includes(from)) throw new Error(`${DOCUMENTED} no longer holds ${from}`);
    return text.replace(from, to);
  };
  let site = replace(documented, "server 127.0.0.1:9000;", `server 127.0.0.1:${ports.app};`);
  site = replace(site, "server 127.0.0.1:8080;", `server 127.0.0.1:${ports.service};`);
  site = replace(site, "listen 80;", `listen 127.0.0.1:${ports.nginx};`);
  site = replace(site, "change-me-to-a-secret-of-32-characters-or-more", TEST_SECRET);
  return [
    "daemon off;",
    "master_process off;",
    `pid ${dir}/nginx.pid;`,
    "error_log stderr warn;",
    "events { worker_connections 512; }",
    "http {",
    "  access_log off;",
    ...["client_body", "proxy", "fastcgi", "uwsgi", "scgi"].map(
      (kind) => `  ${kind}_temp_path ${dir}/${kind};`,
    ),
    site,
    "}",
  ].join("\n");
}

const prefix = filePrefix("rn");
let redis: Redis;
let service: ServiceProcess;
let app: Server;
let nginx: ChildProcess | undefined;
let nginxUrl = "";
let nginxErrors = "";
const agent = new Agent({ keepAlive: true, maxSockets: 32 });

function slowFreeTier(input: TPolicyDocumentInput): void {
  const free = input.tiers.find((tier) => tier.name === "free");
  if (free === undefined) throw new Error("no free tier");
  free.limit = tokenBucket(20, 0.001);
}

describe.skipIf(nginxBinary === null)("nginx with auth_request to the service", () => {
  beforeAll(async () => {
    redis = new Redis(inject("redisUrl"));
    await publishTestSnapshot(redis, prefix, snapshotVersion(1, slowFreeTier));
    app = createServer((req, res) => {
      req.resume();
      res.writeHead(200, { "Content-Type": "application/json" });
      res.end('{"endpoint":"things"}');
    });
    app.listen(0, "127.0.0.1");
    await once(app, "listening");
    const appAddress = app.address();
    if (appAddress === null || typeof appAddress === "string") throw new Error("no app port");
    service = await startService({ prefix, id: "rls-nginx", args: ["--expected-gateways", "1"] });
    await waitForReady(service);

    const dir = mkdtempSync(path.join(tmpdir(), "lp-nginx-"));
    const port = await freePort();
    const conf = path.join(dir, "nginx.conf");
    writeFileSync(
      conf,
      nginxConfig(dir, {
        nginx: port,
        app: appAddress.port,
        service: Number(new URL(service.httpUrl).port),
      }),
    );
    nginx = spawn(nginxBinary ?? "nginx", ["-p", dir, "-c", conf, "-e", "stderr"], {
      stdio: ["ignore", "ignore", "pipe"],
    });
    nginx.stderr?.on("data", (chunk: Buffer) => {
      nginxErrors += chunk.toString();
    });
    nginxUrl = `http://127.0.0.1:${port}`;
    await waitFor("nginx to listen", async () => {
      if (nginx?.exitCode !== null) throw new Error(`nginx exited: ${nginxErrors}`);
      try {
        return (await fetch(`${nginxUrl}/v1/things`, { headers: { "x-customer-id": "warm" } }))
          .status === 200
          ? true
          : undefined;
      } catch {
        return undefined;
      }
    });
  });

  afterAll(async () => {
    agent.destroy();
    if (nginx !== undefined && nginx.exitCode === null) {
      const exited = once(nginx, "exit");
      nginx.kill("SIGQUIT");
      await exited;
    }
    await service?.stop();
    app?.close();
    redis?.disconnect();
  });

  it("the worked example: 25 at once give 20×200 and 5×429, each 429 with Retry-After, the fields and the problem body", async () => {
    // sendRequest reads only the URL of what it is given.
    const target: GatewayProcess = {
      url: nginxUrl,
      id: "nginx",
      child: nginx as ChildProcess,
      stderr: () => nginxErrors,
      stop: async () => {},
    };
    const replies: Reply[] = await Promise.all(
      Array.from({ length: 25 }, () =>
        sendRequest(agent, target, "/v1/things", { "x-customer-id": "nginx-1", "x-tier": "free" }),
      ),
    );
    const ok = replies.filter((reply) => reply.status === 200);
    const rejected = replies.filter((reply) => reply.status === 429);
    expect(ok).toHaveLength(20);
    expect(rejected).toHaveLength(5);
    expect(ok[0]?.headers["ratelimit-policy"]).toMatch(/^"tier:free";q=20;/);
    for (const reply of rejected) {
      expect(reply.headers["content-type"]).toBe("application/problem+json");
      const { problem } = checkRateLimitContract({
        status: 429,
        header: (name) => reply.headers[name],
        bodyText: reply.body,
      });
      expect(problem).toMatchObject({ code: "RATE_LIMITED", scope: "tier:free" });
    }
    expect(nginxErrors).not.toMatch(/\[(error|crit|alert|emerg)\]/);
  });
});
