/**
 * Alert webhooks against a real HTTP receiver (node:http on an ephemeral port) and the real
 * database: a new alert is delivered once to every URL, never again while it lasts, not twice by
 * two workers or a restarted one, and a delivery the receiver refused with a 500 is retried after
 * its backoff and then delivered, with the same delivery id and body.
 */
import { randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type Server } from "node:http";
import { createEnforcer } from "@limitplane/enforcer";
import { readDecisionMinute } from "@limitplane/enforcer/publication";
import { exampleSnapshot } from "@limitplane/enforcer/testing";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import {
  type AlertWebhookDeps,
  deliverAlertWebhooks,
} from "@/lib/control/alerts/deliver-alert-webhooks";
import { systemClock } from "@/lib/server/composition";
import { alertWebhooksJob } from "@/lib/worker";
import { readyRedis, unreachableRedis } from "../support/redis";
import { waitFor } from "./helpers/gateway-processes";
import { uniqueName } from "./helpers/policy-fixtures";
import { provideTestDatabase } from "./helpers/test-database";

const database = provideTestDatabase();
const MINUTE_MS = 60_000;

interface Received {
  readonly path: string;
  readonly deliveryHeader: string | undefined;
  readonly body: {
    deliveryId: string;
    alertKey: string;
    episode: number;
    alert: {
      kind: string;
      scope: string;
      direction: string;
      decisionsWithoutStore?: number;
      withoutStore?: Record<string, number>;
    };
  };
}

/** A webhook receiver: answers each request with the next status queued (200 when none). */
class Receiver {
  readonly received: Received[] = [];
  readonly statuses: number[] = [];
  #server: Server | null = null;
  #port = 0;

  async start(): Promise<void> {
    this.#server = createServer((request, response) => {
      void readBody(request).then((text) => {
        this.received.push({
          path: request.url ?? "",
          deliveryHeader: headerOf(request, "limitplane-delivery"),
          body: JSON.parse(text),
        });
        response.writeHead(this.statuses.shift() ?? 200, { "content-type": "text/plain" });
        response.end("ok");
      });
    });
    await new Promise<void>((resolve) => this.#server?.listen(0, "127.0.0.1", resolve));
    const address = this.#server.address();
    if (address === null || typeof address === "string") throw new Error("no TCP port");
    this.#port = address.port;
  }

  url(path: string): string {
    return `http://127.0.0.1:${this.#port}${path}`;
  }

  forPath(path: string): Received[] {
    return this.received.filter((request) => request.path === path);
  }

  async stop(): Promise<void> {
    await new Promise<void>((resolve) => this.#server?.close(() => resolve()));
  }
}

function headerOf(request: IncomingMessage, name: string): string | undefined {
  const value = request.headers[name];
  return typeof value === "string" ? value : undefined;
}

async function readBody(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(Buffer.from(chunk));
  return Buffer.concat(chunks).toString("utf8");
}

const receiver = new Receiver();

beforeAll(async () => {
  await receiver.start();
});

afterAll(async () => {
  await receiver.stop();
});

/**
 * A scope whose rejection rate jumps from 1% over an hour to 60% over the last five minutes,
 * 100 requests a minute throughout, ending at `endMs` (a minute boundary): an alert at `endMs`.
 */
async function seedSharpRise(scope: string, endMs: number): Promise<void> {
  const rows = [];
  for (let minute = 65; minute >= 1; minute--) {
    const isRecent = minute <= 5;
    rows.push({
      scope,
      minute: new Date(endMs - minute * MINUTE_MS),
      allowed: isRecent ? 40 : 99,
      rejected: isRecent ? 60 : 1,
    });
  }
  await database.current().db.metricMinute.createMany({ data: rows });
}

function depsAt(clock: { nowMs: number }): AlertWebhookDeps {
  return { db: database.current().db, live: null, clock: { nowMs: () => clock.nowMs } };
}

/** Each test runs at a time of its own, hours apart, so one test's traffic is not another's alert. */
function testInstant(hoursAgo: number): number {
  return (Math.floor(Date.now() / MINUTE_MS) - hoursAgo * 60) * MINUTE_MS + 10_000;
}

describe("alert webhooks", () => {
  it("turn decisions an enforcer made without Redis into one alert, with the counts by reason", async () => {
    // An enforcer whose decisions connection finds no Redis (a real client at a port where
    // nothing listens) while its reporting connection works: every decision is made by the
    // failure policies, and the counts reach the shared Redis as the flusher writes them.
    const prefix = `${inject("redisKeyPrefix")}dg${randomBytes(2).toString("hex")}:`;
    const control = await readyRedis("control");
    const subscriber = await readyRedis("subscriber");
    const decisions = await unreachableRedis();
    const enforcer = await createEnforcer({
      redis: { clients: { decisions, control, subscriber }, keyPrefix: prefix },
      expectedGateways: 1,
      controlPlane: { bootstrapSnapshot: exampleSnapshot(), startupWaitMs: 500 },
      reporting: { metricsFlushIntervalMs: 100 },
      logger: { log() {} },
    });
    try {
      for (let i = 0; i < 30; i++) {
        const { decision } = await enforcer.check({
          customerId: "acme",
          tier: "pro",
          method: "GET",
          path: "/v1/things",
        });
        expect(decision.degraded).toBe(true);
      }
      const withoutStore = enforcer.status().decisionsWithoutStore;
      // Errors until the breaker opened, then the breaker answered: both are counted.
      expect(withoutStore["store-error"]).toBeGreaterThan(0);
      expect(withoutStore["circuit-open"]).toBeGreaterThan(0);
      expect(withoutStore["store-error"] + withoutStore["circuit-open"]).toBe(30);
      const minute = Math.floor(Date.now() / MINUTE_MS);
      await waitFor("the counts to be flushed", async () => {
        const counts = await Promise.all(
          [minute - 1, minute, minute + 1].map((m) => readDecisionMinute(control, prefix, m)),
        );
        const flushed = counts.reduce(
          (sum, c) => sum + c.withoutStore.storeError + c.withoutStore.circuitOpen,
          0,
        );
        return flushed === 30 ? true : undefined;
      });

      const url = receiver.url("/degraded");
      const outcome = await deliverAlertWebhooks(
        { db: database.current().db, live: { redis: control, prefix }, clock: systemClock },
        { urls: [url] },
      );
      expect(outcome.delivered).toBeGreaterThanOrEqual(1);
      const [request, ...more] = receiver.forPath("/degraded");
      expect(more).toEqual([]);
      expect(request?.body).toMatchObject({
        alertKey: "degraded-decisions",
        alert: {
          kind: "degraded-decisions",
          decisionsWithoutStore: 30,
          withoutStore: {
            storeError: withoutStore["store-error"],
            timeout: 0,
            circuitOpen: withoutStore["circuit-open"],
          },
        },
      });
    } finally {
      await enforcer.stop();
      decisions.disconnect();
      control.disconnect();
      subscriber.disconnect();
    }
  });

  it("deliver a new alert once to every URL, and never again while it lasts, whatever the workers", async () => {
    const clock = { nowMs: testInstant(30) };
    const scope = `tier:${uniqueName("rise")}`;
    await seedSharpRise(scope, clock.nowMs - 10_000);
    const urls = [receiver.url("/dedupe/a"), receiver.url("/dedupe/b")];

    // Two workers during a leader handover run at the same moment.
    const outcomes = await Promise.all([
      deliverAlertWebhooks(depsAt(clock), { urls }),
      deliverAlertWebhooks(depsAt(clock), { urls }),
    ]);
    expect(outcomes.map((outcome) => outcome.activeAlerts)).toEqual([1, 1]);
    expect(outcomes.reduce((sum, outcome) => sum + outcome.opened, 0)).toBe(2);
    expect(outcomes.reduce((sum, outcome) => sum + outcome.delivered, 0)).toBe(2);

    for (const url of ["/dedupe/a", "/dedupe/b"]) {
      const requests = receiver.forPath(url);
      expect(requests).toHaveLength(1);
      expect(requests[0]?.body).toMatchObject({
        alertKey: `rejection-rate-change:${scope}:rise`,
        episode: 1,
        alert: { kind: "rejection-rate-change", scope, direction: "rise" },
      });
      expect(requests[0]?.deliveryHeader).toBe(requests[0]?.body.deliveryId);
    }

    // A minute later the alert still holds; a restarted worker (a new job) runs again.
    clock.nowMs += MINUTE_MS;
    const job = alertWebhooksJob({ deps: depsAt(clock), urls });
    await job.run(new AbortController().signal);
    await deliverAlertWebhooks(depsAt(clock), { urls });
    expect(receiver.forPath("/dedupe/a")).toHaveLength(1);
    expect(receiver.forPath("/dedupe/b")).toHaveLength(1);

    const rows = await database.current().db.alertDelivery.findMany({
      where: { alertKey: `rejection-rate-change:${scope}:rise` },
      select: { url: true, status: true, attempts: true, deliveredAt: true, episode: true },
      orderBy: { url: "asc" },
    });
    expect(rows).toEqual(
      urls.map((url) => ({
        url,
        status: "delivered",
        attempts: 1,
        deliveredAt: expect.any(Date),
        episode: 1,
      })),
    );
  });

  it("retry a delivery the receiver answered 500 after its backoff, with the same id and body", async () => {
    const clock = { nowMs: testInstant(20) };
    const scope = `tier:${uniqueName("retry")}`;
    await seedSharpRise(scope, clock.nowMs - 10_000);
    const url = receiver.url("/retry");
    const options = { urls: [url], retryBaseMs: 30_000 };
    receiver.statuses.push(500);

    const failed = await deliverAlertWebhooks(depsAt(clock), options);
    expect(failed).toMatchObject({ opened: 1, delivered: 0, failedAttempts: 1 });
    expect(failed.nextAttemptAtMs).toBe(clock.nowMs + 30_000);
    const stored = await database.current().db.alertDelivery.findFirstOrThrow({
      where: { url },
      select: { status: true, attempts: true, lastError: true },
    });
    expect(stored).toEqual({
      status: "pending",
      attempts: 1,
      lastError: "the receiver answered 500",
    });

    // Before the backoff has passed: nothing is sent.
    clock.nowMs += 29_000;
    expect(await deliverAlertWebhooks(depsAt(clock), options)).toMatchObject({
      delivered: 0,
      failedAttempts: 0,
    });
    expect(receiver.forPath("/retry")).toHaveLength(1);

    // After it: the same delivery again, and this time the receiver takes it.
    clock.nowMs += 1_000;
    const retried = await deliverAlertWebhooks(depsAt(clock), options);
    expect(retried).toMatchObject({ opened: 0, delivered: 1, nextAttemptAtMs: null });
    const requests = receiver.forPath("/retry");
    expect(requests).toHaveLength(2);
    expect(requests[1]?.body).toEqual(requests[0]?.body);
    expect(requests[1]?.deliveryHeader).toBe(requests[0]?.deliveryHeader);
    expect(
      await database.current().db.alertDelivery.findFirstOrThrow({
        where: { url },
        select: { status: true, attempts: true, lastError: true },
      }),
    ).toEqual({ status: "delivered", attempts: 2, lastError: null });

    // Delivered is final: later runs send nothing more.
    clock.nowMs += MINUTE_MS;
    await deliverAlertWebhooks(depsAt(clock), options);
    expect(receiver.forPath("/retry")).toHaveLength(2);
  });

  it("give up after the last attempt, and say why", async () => {
    const clock = { nowMs: testInstant(10) };
    const scope = `tier:${uniqueName("give-up")}`;
    await seedSharpRise(scope, clock.nowMs - 10_000);
    const url = receiver.url("/give-up");
    const options = { urls: [url], retryBaseMs: 1_000, maxAttempts: 2 };
    receiver.statuses.push(503, 502);

    await deliverAlertWebhooks(depsAt(clock), options);
    clock.nowMs += 1_000;
    const last = await deliverAlertWebhooks(depsAt(clock), options);
    expect(last).toMatchObject({ failedAttempts: 1, nextAttemptAtMs: null });
    clock.nowMs += 10 * MINUTE_MS;
    await deliverAlertWebhooks(depsAt(clock), options);
    expect(receiver.forPath("/give-up")).toHaveLength(2);
    expect(
      await database.current().db.alertDelivery.findFirstOrThrow({
        where: { url },
        select: { status: true, attempts: true, lastError: true },
      }),
    ).toEqual({ status: "failed", attempts: 2, lastError: "the receiver answered 502" });
  });

  it("send an alert that cleared and came back again, as its next episode", async () => {
    const clock = { nowMs: testInstant(60) };
    const scope = `tier:${uniqueName("returns")}`;
    const url = receiver.url("/episodes");
    await seedSharpRise(scope, clock.nowMs - 10_000);
    await deliverAlertWebhooks(depsAt(clock), { urls: [url] });

    // Two hours on, the scope is quiet: the alert has cleared.
    clock.nowMs += 120 * MINUTE_MS;
    expect(await deliverAlertWebhooks(depsAt(clock), { urls: [url] })).toMatchObject({
      opened: 0,
      delivered: 0,
    });
    const cleared = await database.current().db.alertDelivery.findFirstOrThrow({
      where: { url },
      select: { resolvedAt: true },
    });
    expect(cleared.resolvedAt?.getTime()).toBe(clock.nowMs);

    // Another hour on, the same scope jumps again: a new episode, delivered again.
    clock.nowMs += 60 * MINUTE_MS;
    await seedSharpRise(scope, clock.nowMs - 10_000);
    expect(await deliverAlertWebhooks(depsAt(clock), { urls: [url] })).toMatchObject({
      opened: 1,
      delivered: 1,
    });
    expect(receiver.forPath("/episodes").map((request) => request.body.episode)).toEqual([1, 2]);
  });

  it("send nothing without URLs", async () => {
    const clock = { nowMs: testInstant(40) };
    await seedSharpRise(`tier:${uniqueName("no-urls")}`, clock.nowMs - 10_000);
    expect(await deliverAlertWebhooks(depsAt(clock), { urls: [] })).toEqual({
      activeAlerts: 0,
      opened: 0,
      delivered: 0,
      failedAttempts: 0,
      nextAttemptAtMs: null,
    });
  });
});
