/**
 * The last good policy on disk, with real processes: a demo gateway started with Redis up saves
 * the policy it applies (`--policy-cache`); with Redis stopped, a new gateway process started on
 * that file decides with the cached policy (each limit's failure policy, exact counts), while one
 * without a cache runs no policy; Redis back, the heartbeat says `policy: cached` and the console's
 * fleet table and /status show it as cached; a new version
 * published replaces the cached one, and is saved; a refused version is never saved.
 *
 * The policy: tiers fail open, anonymous sign-in fails closed, and the per-address ceiling falls
 * back to a local share: 30 requests (refilling one per 1000 s) among 3 gateways is 10 each.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { readEnforcerHeartbeats } from "@limitplane/enforcer/publication";
import { publishTestSnapshot, tokenBucket } from "@limitplane/enforcer/testing";
import { Redis } from "ioredis";
import { createElement } from "react";
import { renderToStaticMarkup } from "react-dom/server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EnforcerPolicyCell } from "@/components/fleet/enforcer-policy-cell";
import { listEnforcers } from "@/lib/control/fleet/list-enforcers";
import { gatewaysStatusOf } from "@/lib/server/status";
import {
  filePrefix,
  type GatewayProcess,
  health,
  type PrivateRedis,
  privateRedis,
  startGateway,
  waitFor,
  waitForVersion,
} from "./helpers/gateway-processes";
import { flipMiddleByte, publishWhole, snapshotVersion } from "./helpers/snapshots";

const prefix = filePrefix("pc");
let redis: PrivateRedis;
let dir: string;
let cacheFile: string;
const started: GatewayProcess[] = [];

const ARGS = ["--expected-gateways", "3", "--trust-proxy", "1"];
const enterprise = { authorization: "Bearer acme", "x-tier": "enterprise" };

function version(number: number) {
  return snapshotVersion(number, (input) => {
    input.ceilings.perAddress = tokenBucket(30, 0.001);
  });
}

async function start(id: string, withCache: boolean): Promise<GatewayProcess> {
  const gateway = await startGateway({
    prefix,
    redisUrl: redis.url,
    id,
    args: [...ARGS, ...(withCache ? ["--policy-cache", cacheFile] : [])],
  });
  started.push(gateway);
  return gateway;
}

/** The versions a gateway logged as saved to its cache file. */
function savedVersions(gateway: GatewayProcess): number[] {
  return gateway
    .stderr()
    .split("\n")
    .filter((line) => line.includes('"msg":"policy saved to the cache on disk"'))
    .map((line) => (JSON.parse(line) as { version: number }).version);
}

async function statuses(gateway: GatewayProcess, paths: string[], headers = {}, method = "GET") {
  const answers: number[] = [];
  for (const at of paths) {
    const response = await fetch(`${gateway.url}${at}`, { method, headers });
    await response.arrayBuffer();
    answers.push(response.status);
  }
  return answers;
}

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "lp-policy-cache-it-"));
  cacheFile = path.join(dir, "gateway.lpcache");
  redis = await privateRedis();
});

afterAll(async () => {
  await Promise.all(started.map((gateway) => gateway.stop()));
  await redis.stop();
  await rm(dir, { recursive: true, force: true });
});

describe("the last good policy on disk", () => {
  it("is saved, enforced by a new process while Redis is down, and replaced by the live one", async () => {
    const client = new Redis(redis.url);
    client.on("error", () => {});
    try {
      await publishTestSnapshot(client, prefix, version(1));
      const first = await start("pc-first", true);
      await waitForVersion([first], 1);
      await waitFor("version 1 saved to the cache", () =>
        savedVersions(first).includes(1) ? true : undefined,
      );
      await first.stop();

      await redis.stop();
      const [cached, bare] = await Promise.all([start("pc-cached", true), start("pc-bare", false)]);

      // The new process enforces the cached version, and says so.
      const report = (await health(cached)) as Awaited<ReturnType<typeof health>> & {
        policy: { version: number; via: string; savedAtMs: number } | null;
        policyDescription: string;
      };
      expect(report.isReady).toBe(true);
      expect(report.policy).toMatchObject({ version: 1, via: "cache", publishedAtMs: null });
      const savedAt = new Date(report.policy?.savedAtMs ?? 0).toISOString();
      expect(report.policyDescription).toBe(`cached (version 1, saved at ${savedAt})`);
      expect(cached.stderr()).toContain(
        '"msg":"Redis gave no policy within the start-up wait: enforcing the policy cached on disk until it does"',
      );
      expect(cached.stderr()).toContain(`"policy":"cached (version 1, saved at ${savedAt})"`);
      expect((await health(bare)).policy).toBeNull();

      // Each limit's failure policy, exactly: the per-address ceiling's local share (30 / 3).
      const anonymous = Array.from({ length: 12 }, () => "/v1/things");
      expect(await statuses(cached, anonymous)).toEqual([...Array(10).fill(200), 429, 429]);
      // Anonymous sign-in fails closed; the enterprise tier fails open.
      expect(await statuses(cached, ["/v1/auth/sign-in"], {}, "POST")).toEqual([503]);
      expect(await statuses(cached, ["/v1/things", "/v1/things"], enterprise)).toEqual([200, 200]);
      // Without a cache: no policy, every request admitted unchecked.
      expect(await statuses(bare, anonymous)).toEqual(Array(12).fill(200));
      expect(await statuses(bare, ["/v1/auth/sign-in"], {}, "POST")).toEqual([200]);

      // Redis back, empty: the heartbeat says the policy is the cached one, and since when.
      await redis.start();
      const beats = await waitFor("the heartbeats after Redis came back", async () => {
        const read = await readEnforcerHeartbeats(client, prefix, 10);
        const byId = new Map(read.heartbeats.map((beat) => [beat.id, beat]));
        const [onCache, without] = [byId.get("pc-cached"), byId.get("pc-bare")];
        return onCache !== undefined && without !== undefined ? { onCache, without } : undefined;
      });
      expect(beats.onCache).toMatchObject({
        version: 1,
        noPolicy: null,
        cachedPolicy: { savedAtMs: report.policy?.savedAtMs },
      });
      expect(beats.without).toMatchObject({ version: null, cachedPolicy: null });
      expect(beats.without.noPolicy).not.toBeNull();
      const hash = await client.hgetall(`${prefix}enforcer:pc-cached`);
      expect([hash.policy, hash.policyDescription]).toEqual([
        "cached",
        `cached (version 1, saved at ${savedAt})`,
      ]);

      // The console says so: the fleet table's "cached" badge with the save time, and /status.
      const fleet = await listEnforcers({
        redis: client,
        prefix,
        clock: { nowMs: () => Date.now() },
      });
      const policyCell = (id: string) => {
        const enforcer = fleet.enforcers.find((entry) => entry.id === id);
        if (enforcer === undefined) throw new Error(`${id} is not in the fleet`);
        return renderToStaticMarkup(createElement(EnforcerPolicyCell, { enforcer }));
      };
      expect(policyCell("pc-cached")).toContain('<span class="badge badge-warn">cached</span>');
      expect(policyCell("pc-cached")).toContain(savedAt);
      expect(policyCell("pc-bare")).not.toContain("cached");
      expect(policyCell("pc-bare")).toContain("no policy");
      expect(gatewaysStatusOf(fleet).onCachedPolicy).toEqual([
        { id: "pc-cached", version: 1, savedAtMs: report.policy?.savedAtMs },
      ]);

      // A new version published: the cached policy is replaced, and the new one saved.
      await publishTestSnapshot(client, prefix, version(2));
      await waitForVersion([cached, bare], 2);
      expect((await health(cached)).policy).toMatchObject({ version: 2, via: "snapshot" });
      await waitFor("version 2 saved to the cache", () =>
        savedVersions(cached).includes(2) ? true : undefined,
      );
      await waitFor("the heartbeat to say the policy is live", async () => {
        const live = await client.hgetall(`${prefix}enforcer:pc-cached`);
        return live.policy === "applied" && live.version === "2" ? true : undefined;
      });

      // A damaged version is refused, and never reaches the file.
      await publishWhole(client, prefix, version(3), { damage: flipMiddleByte });
      await waitFor("the damaged version to be refused", async () =>
        (await health(cached)).snapshotErrors.lastVersion === 3 ? true : undefined,
      );
      await cached.stop();
      expect((await health(bare)).policy?.version).toBe(2);
      expect(savedVersions(cached)).toEqual([2]);
    } finally {
      client.disconnect();
    }
  });
});
