/**
 * The audit webhook, end to end: an admin sets it through the API (audited, hostile input refused
 * by field with nothing written), and the real worker process (`scripts/worker.ts`) POSTs every
 * audit entry from then on to a real HTTP receiver: each exactly once, in the log's order, with its
 * sentence, signed so the receiver can verify it. A receiver that is down for a while gets every
 * entry it missed, in order, once it is back.
 */
import type { ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { once } from "node:events";
import { createServer, type Server } from "node:http";
import { afterAll, describe, expect, inject, it } from "vitest";
import { updateAuditWebhook } from "@/lib/control/audit-webhook/audit-webhook-settings";
import { listAuditWebhookDeliveries } from "@/lib/control/audit-webhook/list-audit-webhook-deliveries";
import { createCustomer } from "@/lib/control/customer/create-customer";
import { AUDIT_WEBHOOK_TOPIC } from "@/lib/control/outbox/outbox";
import { verifyWebhookSignature } from "@/lib/control/webhooks/webhook-signature";
import { provideApiHarness } from "./helpers/api-harness";
import { operatorContext, uniqueName } from "./helpers/policy-fixtures";
import { waitFor } from "./helpers/wait-for";
import { spawnWorkerProcess } from "./helpers/worker-process";

const api = provideApiHarness();
const PATH = "/api/v1/audit-webhook";
const admin = () => ({ token: api.as("admin").token });

interface Received {
  readonly deliveryHeader: string | undefined;
  readonly signature: string | undefined;
  readonly text: string;
  readonly body: {
    deliveryId: string;
    type: string;
    entry: { id: string; action: string; summary: string };
  };
}

/** A webhook receiver on a fixed port, so it can be stopped and started again at the same URL. */
class Receiver {
  readonly received: Received[] = [];
  #server: Server | null = null;
  port = 0;

  async start(): Promise<void> {
    const server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on("data", (chunk: Buffer) => chunks.push(chunk));
      request.on("end", () => {
        const text = Buffer.concat(chunks).toString("utf8");
        const header = (name: string) => {
          const value = request.headers[name];
          return Array.isArray(value) ? value[0] : value;
        };
        this.received.push({
          deliveryHeader: header("limitplane-delivery"),
          signature: header("limitplane-signature"),
          text,
          body: JSON.parse(text),
        });
        response.writeHead(204).end();
      });
    });
    this.#server = server;
    await new Promise<void>((resolve) => server.listen(this.port, "127.0.0.1", resolve));
    const address = server.address();
    if (address === null || typeof address === "string") throw new Error("no TCP port");
    this.port = address.port;
  }

  async stop(): Promise<void> {
    const server = this.#server;
    if (server === null) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    this.#server = null;
  }
}

const receiver = new Receiver();
let worker: ChildProcess | null = null;

afterAll(async () => {
  if (worker !== null && worker.exitCode === null) {
    const exited = once(worker, "exit");
    worker.kill("SIGTERM");
    await exited;
  }
  await receiver.stop();
});

function startWorker(): { output: () => string } {
  const running = spawnWorkerProcess({
    DATABASE_URL: api.database().url,
    REDIS_URL: inject("redisUrl"),
    REDIS_KEY_PREFIX: `${inject("redisKeyPrefix")}${randomBytes(3).toString("hex")}:`,
    WEBHOOK_PRIVATE_ADDRESSES: "allow",
  });
  worker = running.child;
  return running;
}

async function currentVersion(): Promise<number> {
  const response = await api.call("GET", PATH, { as: admin() });
  expect(response.status, response.text).toBe(200);
  return response.body.settings.version;
}

/** The ids of the audit entries from `firstId` on, in the log's order. */
async function entryIdsFrom(firstId: bigint): Promise<string[]> {
  const rows = await api.db().auditEntry.findMany({
    where: { id: { gte: firstId } },
    orderBy: { id: "asc" },
    select: { id: true },
  });
  return rows.map((row) => row.id.toString());
}

async function registerCustomers(count: number): Promise<string[]> {
  const deps = { db: api.db(), publisher: null, clock: { nowMs: () => api.nowMs() } };
  const ids = Array.from({ length: count }, () => uniqueName("hook"));
  // At once: the audit chain orders them, and the webhook must follow that order.
  await Promise.all(
    ids.map((id) =>
      createCustomer({ id, displayName: `Hook ${id}`, tier: "pro" }, operatorContext(), deps),
    ),
  );
  return ids;
}

describe("the audit webhook's settings", () => {
  it("GET 200 shows none yet; 401 without a token, 403 below admin", async () => {
    const response = await api.call("GET", PATH, { as: admin() });
    expect(response.status, response.text).toBe(200);
    expect(response.body.settings).toEqual({
      url: null,
      hasSigningSecret: false,
      version: 0,
      createdAt: null,
      updatedAt: null,
    });
    expect((await api.call("GET", PATH, {})).status).toBe(401);
    expect((await api.call("GET", PATH, { as: { token: api.as("operator").token } })).status).toBe(
      403,
    );
    const put = await api.call("PUT", PATH, {
      as: { token: api.as("operator").token },
      body: { url: "https://hooks.example.com/a", expectedVersion: 0, reason: "try" },
    });
    expect(put.status).toBe(403);
  });

  it.each<[string, Record<string, unknown>, string, string]>([
    [
      "a scheme other than http(s)",
      { url: "ftp://hooks.example.com/" },
      "url",
      "url must start with https:// or http://",
    ],
    ["not a URL", { url: "hooks" }, "url", "url is not a URL"],
    [
      "the cloud metadata address",
      { url: "http://169.254.169.254/latest/meta-data" },
      "url",
      "url points at 169.254.169.254, which is not a public address (WEBHOOK_PRIVATE_ADDRESSES=allow permits it)",
    ],
    [
      "loopback over IPv6",
      { url: "http://[::1]:6379/" },
      "url",
      "url points at ::1, which is not a public address (WEBHOOK_PRIVATE_ADDRESSES=allow permits it)",
    ],
    [
      "a private network",
      { url: "https://10.1.2.3/hook" },
      "url",
      "url points at 10.1.2.3, which is not a public address (WEBHOOK_PRIVATE_ADDRESSES=allow permits it)",
    ],
    [
      "localhost",
      { url: "http://localhost:5432/" },
      "url",
      "url points at localhost (WEBHOOK_PRIVATE_ADDRESSES=allow permits it)",
    ],
    [
      "credentials in the URL",
      { url: "https://user:pw@hooks.example.com/" },
      "url",
      "url must not carry a user name or password (the body is signed instead)",
    ],
    [
      "an empty URL",
      { url: " " },
      "url",
      "url is empty; give a URL, or null to turn the webhook off",
    ],
    [
      "a number for the URL",
      { url: 42 },
      "url",
      "url must be an https:// or http:// URL, or null to turn the webhook off",
    ],
    [
      "rotateSigningSecret not a boolean",
      { url: "https://hooks.example.com/", rotateSigningSecret: "yes" },
      "rotateSigningSecret",
      "rotateSigningSecret must be true or false",
    ],
  ])("PUT 400 for %s, naming the field; nothing written", async (_, change, field, message) => {
    const before = await api.fingerprint();
    const response = await api.call("PUT", PATH, {
      as: admin(),
      body: { expectedVersion: 0, reason: "hostile", ...change },
    });
    expect(response.status, response.text).toBe(400);
    expect(response.body.error.fieldErrors).toContainEqual({ path: field, message });
    expect(await api.fingerprint()).toEqual(before);
  });

  it("PUT 200 sets it, audited as a sentence, with a signing secret shown once; 409 on a stale version", async () => {
    const response = await api.call("PUT", PATH, {
      as: admin(),
      body: {
        url: "https://hooks.example.com/limitplane?token=abc",
        expectedVersion: 0,
        reason: "feed the SIEM",
      },
    });
    expect(response.status, response.text).toBe(200);
    expect(response.body.settings).toMatchObject({
      url: "https://hooks.example.com/limitplane?token=abc",
      hasSigningSecret: true,
      version: 1,
    });
    expect(response.body.signingSecret).toMatch(/^whsec_[A-Za-z0-9_-]{43}$/);
    const entry = await api.db().auditEntry.findFirstOrThrow({
      where: { action: "audit-webhook.update" },
      orderBy: { id: "desc" },
    });
    // The query string may carry the receiver's token: the log never keeps it.
    expect(entry.after).toEqual({
      url: "https://hooks.example.com/limitplane?…",
      isSigningSecretNew: true,
      version: 1,
    });
    const again = await api.call("GET", PATH, { as: admin() });
    expect(JSON.stringify(again.body)).not.toContain(response.body.signingSecret);

    const stale = await api.call("PUT", PATH, {
      as: admin(),
      body: { url: null, expectedVersion: 0, reason: "stale" },
    });
    expect(stale.status, stale.text).toBe(409);
    expect(stale.body.error.code).toBe("VERSION_CONFLICT");

    // Turning it off keeps the secret and drops what was waiting to be sent.
    const off = await api.call("PUT", PATH, {
      as: admin(),
      body: { url: null, expectedVersion: 1, reason: "SIEM retired" },
    });
    expect(off.status, off.text).toBe(200);
    expect(off.body.signingSecret).toBeNull();
    expect(
      await api
        .db()
        .outboxEvent.count({ where: { topic: AUDIT_WEBHOOK_TOPIC, publishedAt: null } }),
    ).toBe(0);
  });
});

describe("delivery by the worker", () => {
  it("sends every entry once, in order, signed; a receiver that was down gets what it missed", async () => {
    await receiver.start();
    const url = `http://127.0.0.1:${receiver.port}/audit`;
    // The console refuses a loopback URL by default; the settings are saved as a deployment with
    // WEBHOOK_PRIVATE_ADDRESSES=allow would save them.
    const { settings, signingSecret, auditEntryId } = await updateAuditWebhook(
      { url, rotateSigningSecret: true, expectedVersion: await currentVersion() },
      operatorContext("send the log to the test receiver"),
      { ...api.authDeps(), isPrivateAddressAllowed: true },
    );
    expect(settings.url).toBe(url);
    if (signingSecret === null) throw new Error("no new signing secret");
    const firstId = BigInt(auditEntryId);

    const running = startWorker();
    await registerCustomers(12);
    const expectAllDelivered = async (what: string) => {
      const expected = await entryIdsFrom(firstId);
      await waitFor(() => receiver.received.length >= expected.length, {
        what: `${what}: ${expected.length} entries at the receiver (worker: ${running.output()})`,
        timeoutMs: 60_000,
        intervalMs: 50,
      });
      // Exactly once and in the log's order: the received ids are the entries' ids, in order.
      expect(receiver.received.map((request) => request.body.entry.id)).toEqual(expected);
      return expected;
    };
    const firstBatch = await expectAllDelivered("normal conditions");
    expect(firstBatch).toHaveLength(13);
    for (const request of receiver.received) {
      expect(request.deliveryHeader).toBe(request.body.entry.id);
      expect(request.body.deliveryId).toBe(request.body.entry.id);
      expect(request.body.type).toBe("audit.entry");
      expect(verifyWebhookSignature(signingSecret, request.signature, request.text)).not.toBeNull();
      // Signed with this secret, these bytes: another secret or a changed body fails.
      expect(verifyWebhookSignature("whsec_wrong", request.signature, request.text)).toBeNull();
      expect(
        verifyWebhookSignature(signingSecret, request.signature, `${request.text} `),
      ).toBeNull();
    }
    expect(receiver.received[0]?.body.entry.summary).toBe(
      `audit webhook set to http://127.0.0.1:${receiver.port}/audit; new signing secret`,
    );
    expect(receiver.received[1]?.body.entry.summary).toMatch(
      /^customer hook-.* registered in tier pro$/,
    );
    // As the console's Audit webhook page lists them: newest first, every one taken.
    const taken = await listAuditWebhookDeliveries({ limit: 3 }, { db: api.db() });
    expect(taken.waiting).toBe(0);
    expect(taken.deliveries.map((delivery) => delivery.auditEntryId)).toEqual(
      firstBatch.slice(-3).reverse(),
    );
    for (const delivery of taken.deliveries) {
      expect(delivery).toMatchObject({ state: "sent", lastError: null, nextAttemptAt: null });
      expect(delivery.action).toMatch(/^customer\./);
      expect(delivery.sentAt).not.toBeNull();
    }

    // The receiver goes down; the entries made meanwhile wait, retried with backoff.
    await receiver.stop();
    await registerCustomers(5);
    await waitFor(
      async () => {
        const head = await api.db().outboxEvent.findFirst({
          where: { topic: AUDIT_WEBHOOK_TOPIC, publishedAt: null },
          orderBy: { id: "asc" },
          select: { attempts: true, lastError: true },
        });
        return head !== null && head.attempts >= 2 && head.lastError !== null;
      },
      { what: "two failed attempts while the receiver is down", timeoutMs: 30_000, intervalMs: 50 },
    );
    expect(receiver.received).toHaveLength(13);
    // The page: five wait, the oldest of them failed and is retried, the rest not tried yet.
    const waiting = await listAuditWebhookDeliveries({ limit: 10 }, { db: api.db() });
    expect(waiting.waiting).toBe(5);
    expect(waiting.deliveries.slice(0, 5).map((delivery) => delivery.state)).toEqual([
      "waiting",
      "waiting",
      "waiting",
      "waiting",
      "retrying",
    ]);
    expect(waiting.deliveries[4]?.lastError).not.toBeNull();
    expect(waiting.deliveries[5]?.state).toBe("sent");
    await receiver.start();
    const all = await expectAllDelivered("after the receiver came back");
    expect(all).toHaveLength(18);
    expect(
      await api
        .db()
        .outboxEvent.count({ where: { topic: AUDIT_WEBHOOK_TOPIC, publishedAt: null } }),
    ).toBe(0);
  });
});
