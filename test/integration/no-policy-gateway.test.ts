/**
 * A gateway pointed at a Redis that holds no policy under its key prefix (a wrong URL or prefix,
 * or a Redis emptied under a running demo) is never quiet: its heartbeat says `policy: none`
 * with since when, what it does meanwhile and how many requests it decided so; the console's
 * fleet reads it and says so; the alert channel fires once the bound has passed; and the
 * embedder's `withoutPolicy` choice decides what requests get (admitted, or refused with 503).
 */
import { createEnforcer, type Enforcer } from "@limitplane/enforcer";
import { MemoryStore } from "@limitplane/enforcer/limiter";
import { readEnforcerHeartbeats } from "@limitplane/enforcer/publication";
import { publishTestSnapshot } from "@limitplane/enforcer/testing";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { describeNoPolicy } from "@/lib/console/no-policy";
import { detectNoPolicyGateways, NO_POLICY_ALERT_AFTER_MS } from "@/lib/control/alerts/alert-rules";
import { listEnforcers } from "@/lib/control/fleet/list-enforcers";
import { filePrefix, waitFor } from "./helpers/gateway-processes";
import { snapshotVersion } from "./helpers/snapshots";

const redisUrl = inject("redisUrl");
const prefix = filePrefix("nopol");
let redis: Redis;
const running: Enforcer[] = [];

async function start(enforcerId: string, withoutPolicy?: "admit" | "reject"): Promise<Enforcer> {
  const enforcer = await createEnforcer({
    enforcerId,
    expectedGateways: 2,
    store: () => new MemoryStore(),
    logger: { log() {} },
    redis: { url: redisUrl, keyPrefix: prefix },
    controlPlane: { startupWaitMs: 200, pollIntervalMs: 100, withoutPolicy },
    reporting: { heartbeatIntervalMs: 100, metricsFlushIntervalMs: 100, seenCustomers: false },
  });
  running.push(enforcer);
  return enforcer;
}

beforeAll(() => {
  redis = new Redis(redisUrl);
});

afterAll(async () => {
  await Promise.all(running.splice(0).map((enforcer) => enforcer.stop()));
  redis.disconnect();
});

describe("a gateway on a Redis without a policy", () => {
  it("reports it in its heartbeat, the fleet and the alert say so, and its choice applies", async () => {
    const admitting = await start("gw-admit");
    const refusing = await start("gw-reject", "reject");

    const request = { customerId: "initech", method: "GET", path: "/v1/things" };
    for (let index = 0; index < 3; index++) {
      const admitted = await admitting.check(request);
      expect(admitted.decision).toMatchObject({ allowed: true, source: "no-policy" });
      expect(admitted.http.status).toBeNull();
      const refused = await refusing.check(request);
      expect(refused.decision).toMatchObject({
        allowed: false,
        source: "no-policy",
        reason: "store-unavailable",
        scope: "no-policy",
      });
      expect(refused.http.status).toBe(503);
      expect(refused.http.headers["Retry-After"]).toBe("1");
    }

    // The heartbeat hash says it in so many words.
    const raw = await waitFor("both heartbeats counting 3 requests without a policy", async () => {
      const hashes = await Promise.all(
        ["gw-admit", "gw-reject"].map((id) => redis.hgetall(`${prefix}enforcer:${id}`)),
      );
      return hashes.every((hash) => hash.noPolicyDecisions === "3") ? hashes : undefined;
    });
    expect(raw.map((hash) => [hash.policy, hash.noPolicyAction, hash.version])).toEqual([
      ["none", "admit", ""],
      ["none", "reject", ""],
    ]);
    expect(Number(raw[0]?.noPolicySince)).toBe(Number(raw[0]?.startedAt));

    // The fleet as the console reads it.
    const startedAtMs = Date.now();
    const fleet = await listEnforcers({ redis, prefix, clock: { nowMs: () => startedAtMs } });
    expect(fleet.published).toBeNull();
    const byId = new Map(fleet.enforcers.map((enforcer) => [enforcer.id, enforcer]));
    expect(byId.get("gw-admit")?.noPolicy).toMatchObject({ action: "admit", decisions: 3 });
    expect(byId.get("gw-reject")?.noPolicy).toMatchObject({ action: "reject", decisions: 3 });
    const notice = describeNoPolicy(fleet);
    expect(notice?.title).toBe("All 2 gateways run no policy: every request is admitted");
    expect(notice?.detail).toContain("6 requests were admitted unchecked so far.");

    // The alert (and so the webhooks): not within the bound, once it has passed.
    expect(detectNoPolicyGateways(fleet.enforcers, { nowMs: startedAtMs })).toEqual([]);
    const later = startedAtMs + NO_POLICY_ALERT_AFTER_MS + 1_000;
    const [alert, ...rest] = detectNoPolicyGateways(fleet.enforcers, { nowMs: later });
    expect(rest).toEqual([]);
    expect(alert).toMatchObject({
      kind: "no-policy",
      key: "no-policy",
      enforcerIds: ["gw-admit", "gw-reject"],
      decisions: 6,
    });
    expect(alert?.message).toMatch(
      /^2 gateways have run no policy for 30 s or more \(gw-admit, gw-reject\), 1 admitting every request unchecked, the rest refusing them: 6 requests so far\./,
    );

    // A policy arrives: the heartbeat says so and the alert clears.
    await publishTestSnapshot(redis, prefix, snapshotVersion(1));
    const read = await waitFor("both gateways running version 1", async () => {
      const heartbeats = await readEnforcerHeartbeats(redis, prefix, 10);
      return heartbeats.heartbeats.length === 2 &&
        heartbeats.heartbeats.every((beat) => beat.version === 1 && beat.noPolicy === null)
        ? heartbeats
        : undefined;
    });
    expect(detectNoPolicyGateways(read.heartbeats, { nowMs: later })).toEqual([]);
    expect((await admitting.check(request)).decision.source).not.toBe("no-policy");
  });
});
