/**
 * nginx from Debian's package in front of a demo upstream, asking one rate-limit service with
 * `auth_request`, configured by docs/nginx-ratelimit.conf as it is (ports and secret replaced, and
 * the check's timeouts raised for a machine loaded far beyond its cores).
 * The test runs its own nginx (`-p <dir> -c <conf> -e stderr`, `daemon off`) on free ports.
 * Without nginx it skips loudly; with CI set, a missing nginx fails the run.
 */
import { once } from "node:events";
import { Agent, createServer, type Server } from "node:http";
import type { TPolicyDocumentInput } from "@limitplane/enforcer/policy";
import {
  checkRateLimitContract,
  publishTestSnapshot,
  tokenBucket,
} from "@limitplane/enforcer/testing";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { findNginx, type RunningNginx, startNginx } from "../support/nginx";
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

const nginxBinary = findNginx();
if (nginxBinary === null) {
  if (process.env.CI) throw new Error("nginx is not installed: .ci/run installs Debian's nginx");
  console.warn(
    "\n*** SKIPPING the nginx auth_request test: nginx is not installed (apt-get install nginx) ***\n",
  );
}

const prefix = filePrefix("rn");
let redis: Redis;
let service: ServiceProcess;
let app: Server;
let nginx: RunningNginx | undefined;
let nginxUrl = "";
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

    const running = startNginx(
      nginxBinary ?? "nginx",
      {
        nginx: await freePort(),
        app: appAddress.port,
        service: Number(new URL(service.httpUrl).port),
      },
      TEST_SECRET,
      30,
    );
    nginx = running;
    nginxUrl = running.url;
    await waitFor("nginx to listen", async () => {
      if (running.child.exitCode !== null) throw new Error(`nginx exited: ${running.errors()}`);
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
    await nginx?.stop();
    await service?.stop();
    app?.close();
    redis?.disconnect();
  });

  it("the worked example: 25 at once give 20×200 and 5×429, each 429 with Retry-After, the fields and the problem body", async () => {
    // sendRequest reads only the URL of what it is given.
    const target: GatewayProcess = {
      url: nginxUrl,
      id: "nginx",
      child: (nginx as RunningNginx).child,
      stderr: () => nginx?.errors() ?? "",
      stop: async () => {},
    };
    const replies: Reply[] = await Promise.all(
      Array.from({ length: 25 }, () =>
        sendRequest(agent, target, "/v1/things", { "x-customer-id": "nginx-1", "x-tier": "free" }),
      ),
    );
    const ok = replies.filter((reply) => reply.status === 200);
    const rejected = replies.filter((reply) => reply.status === 429);
    const statuses = replies.map((reply) => reply.status).sort();
    expect(statuses, nginx?.errors()).toEqual([...Array(20).fill(200), ...Array(5).fill(429)]);
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
    expect(nginx?.errors()).not.toMatch(/\[(error|crit|alert|emerg)\]/);
  });
});
