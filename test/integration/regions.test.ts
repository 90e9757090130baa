/**
 * Three regions, each with a redis-server of its own on a free port (kept on disk, so a region
 * whose Redis was stopped comes back with what it had), one demo gateway started in each
 * (`REGION`), and the real worker process on `REGIONS`. Changes made once in the control plane
 * reach every region; with one region's Redis stopped, changes are still accepted, the other two
 * apply them, and the stopped one catches up delta by delta, in order, when it returns. A limit is
 * enforced by each region on its own: a customer using two regions gets each region's budget.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { policyRedisNames } from "@limitplane/enforcer/publication";
import { tokenBucket } from "@limitplane/enforcer/testing";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ControlDeps } from "@/lib/control/deps";
import {
  listMetricMinutes,
  type MetricMinuteRecord,
} from "@/lib/control/metric-minute/list-metric-minutes";
import { rollUpMetricMinutes } from "@/lib/control/metric-minute/roll-up-metric-minutes";
import { readPropagation } from "@/lib/control/region/read-propagation";
import { createTier } from "@/lib/control/tier/create-tier";
import { updateTier } from "@/lib/control/tier/update-tier";
import { systemClock } from "@/lib/server/composition";
import { createRedis } from "@/lib/server/redis";
import {
  filePrefix,
  freePort,
  type GatewayProcess,
  health,
  startGateway,
  waitFor,
  waitForVersion,
} from "./helpers/gateway-processes";
import { importExamplePolicy, operatorContext } from "./helpers/policy-fixtures";
import { provideTestDatabase } from "./helpers/test-database";
import { spawnWorkerProcess, type WorkerProcess } from "./helpers/worker-process";

const database = provideTestDatabase();
const prefix = filePrefix("rg");
const NAMES = ["eu-west", "us-east", "us-west"] as const;

/** A redis-server on a free port that writes every command to its append-only file. */
class DurableRedis {
  #child: ChildProcess | undefined;
  private constructor(
    readonly port: number,
    readonly dir: string,
  ) {}

  static async start(): Promise<DurableRedis> {
    const server = new DurableRedis(
      await freePort(),
      await mkdtemp(path.join(tmpdir(), "lp-region-")),
    );
    await server.restart();
    return server;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}/0`;
  }

  async restart(): Promise<void> {
    this.#child = spawn(
      "redis-server",
      [
        "--port",
        String(this.port),
        "--bind",
        "127.0.0.1",
        "--save",
        "",
        "--appendonly",
        "yes",
        "--appendfsync",
        "always",
        "--dir",
        this.dir,
      ],
      { stdio: "ignore" },
    );
    await waitFor(`redis-server on ${this.port}`, async () => {
      const client = new Redis(this.url, { lazyConnect: true, maxRetriesPerRequest: 0 });
      client.on("error", () => {});
      try {
        await client.connect();
        return (await client.ping()) === "PONG" ? true : undefined;
      } catch {
        return undefined;
      } finally {
        client.disconnect();
      }
    });
  }

  /** SIGTERM: Redis flushes its append-only file and exits. */
  async stop(): Promise<void> {
    const child = this.#child;
    this.#child = undefined;
    if (child === undefined || child.exitCode !== null) return;
    const exited = once(child, "exit");
    child.kill("SIGTERM");
    await exited;
  }

  async remove(): Promise<void> {
    await this.stop();
    await rm(this.dir, { recursive: true, force: true });
  }
}

interface RegionUnderTest {
  readonly name: string;
  readonly redis: DurableRedis;
  gateway: GatewayProcess;
}

let regions: RegionUnderTest[] = [];
let worker: WorkerProcess | undefined;
let deps: ControlDeps;
let latestVersion = 0;

function region(name: (typeof NAMES)[number]): RegionUnderTest {
  const found = regions.find((entry) => entry.name === name);
  if (found === undefined) throw new Error(`no region ${name}`);
  return found;
}

function regionsJson(servers: readonly { name: string; redis: DurableRedis }[]): string {
  return JSON.stringify(servers.map((entry) => ({ name: entry.name, url: entry.redis.url })));
}

/** Published versions per region, in the order the worker logged them. */
function publishedTo(name: string): number[] {
  return [...(worker?.output() ?? "").matchAll(/published policy version ([\d, ]+) to ([a-z-]+)/g)]
    .filter((match) => match[2] === name)
    .flatMap((match) => (match[1] ?? "").split(", ").map(Number));
}

async function changeTier(capacity: number): Promise<number> {
  const changed = await updateTier(
    { name: "regional", expectedVersion: latestVersion, limit: tokenBucket(capacity, 0.001) },
    operatorContext(`capacity ${capacity}`),
    deps,
  );
  latestVersion = changed.tier.version;
  if (changed.policyVersion === null) throw new Error("the change made no policy version");
  return changed.policyVersion;
}

beforeAll(async () => {
  const db = database.current().db;
  deps = { db, publisher: null, clock: systemClock };
  await importExamplePolicy(deps);
  const created = await createTier(
    { name: "regional", limit: tokenBucket(20, 0.001) },
    operatorContext("a tier for the regions test"),
    deps,
  );
  latestVersion = created.tier.version;
  const servers = await Promise.all(
    NAMES.map(async (name) => ({ name, redis: await DurableRedis.start() })),
  );
  const REGIONS = regionsJson(servers);
  worker = spawnWorkerProcess({
    DATABASE_URL: database.current().url,
    REGIONS,
    REDIS_KEY_PREFIX: prefix,
  });
  const gateways = await Promise.all(
    servers.map((server) =>
      startGateway({
        prefix,
        id: `gw-${server.name}`,
        env: { REGIONS, REGION: server.name },
        args: ["--expected-gateways", "1"],
      }),
    ),
  );
  regions = servers.map((server, index) => {
    const gateway = gateways[index];
    if (gateway === undefined) throw new Error("no gateway");
    return { ...server, gateway };
  });
  await waitForVersion(gateways, created.policyVersion ?? 0, 60_000);
}, 180_000);

afterAll(async () => {
  await Promise.all(regions.map((entry) => entry.gateway.stop()));
  if (worker !== undefined && worker.child.exitCode === null) {
    const exited = once(worker.child, "exit");
    worker.child.kill("SIGTERM");
    await exited;
  }
  await Promise.all(regions.map((entry) => entry.redis.remove()));
});

describe("regions", () => {
  it("a change made once is applied in every region, each from its own Redis", async () => {
    const version = await changeTier(21);
    await waitForVersion(
      regions.map((entry) => entry.gateway),
      version,
      60_000,
    );
    for (const entry of regions) {
      const client = new Redis(entry.redis.url);
      const head = await client.hget(policyRedisNames(prefix).head, "version");
      client.disconnect();
      expect(head).toBe(String(version));
    }
    // A region's row moves when its drain commits, just after its Redis took the version.
    const rows = await waitFor("every region's row to reach the version", async () => {
      const found = await deps.db.regionPublication.findMany({ orderBy: { region: "asc" } });
      return found.every((row) => row.publishedVersion === version) ? found : undefined;
    });
    expect(rows.map((row) => [row.region, row.publishedVersion])).toEqual(
      NAMES.map((name) => [name, version]),
    );
  });

  it("with one region's Redis stopped, changes are accepted and applied elsewhere; it catches up in order", async () => {
    const stopped = region("us-west");
    const before = (await health(stopped.gateway)).policy?.version ?? 0;
    await stopped.redis.stop();

    const versions = [await changeTier(22), await changeTier(23), await changeTier(24)];
    const last = versions.at(-1) ?? 0;
    await waitForVersion([region("eu-west").gateway, region("us-east").gateway], last, 60_000);
    expect((await health(stopped.gateway)).policy?.version).toBe(before);
    const waiting = await waitFor("us-west's failed attempt to be recorded", async () => {
      const row = await deps.db.regionPublication.findUnique({ where: { region: "us-west" } });
      return row !== null && row.lastError !== null ? row : undefined;
    });
    expect(waiting.publishedVersion).toBe(before);
    // The region's row moves when the drain's transaction commits, just after Redis took it.
    const propagation = await waitFor("eu-west and us-east to be recorded as applied", async () => {
      const read = await readPropagation(last, { db: deps.db, regions: NAMES });
      return read?.regions.filter((entry) => entry.isApplied).length === 2 ? read : undefined;
    });
    expect(propagation.regions.map((entry) => [entry.region, entry.isApplied])).toEqual([
      ["eu-west", true],
      ["us-east", true],
      ["us-west", false],
    ]);
    expect(propagation.regions[2]?.lastError).toEqual(expect.any(String));
    // The outbox rows stay pending until every region has the version.
    const pending = await deps.db.outboxEvent.count({ where: { publishedAt: null } });
    expect(pending).toBe(versions.length);

    await stopped.redis.restart();
    await waitForVersion([stopped.gateway], last, 60_000);
    // Each delta was accepted only onto the version before it: all three are in the log.
    const client = new Redis(stopped.redis.url);
    const logged = Object.keys(await client.hgetall(policyRedisNames(prefix).deltas)).map(Number);
    client.disconnect();
    expect(logged).toEqual(expect.arrayContaining(versions));
    const row = await waitFor("us-west's row to reach the last version", async () => {
      const found = await deps.db.regionPublication.findUnique({ where: { region: "us-west" } });
      return found?.publishedVersion === last ? found : undefined;
    });
    expect(row).toMatchObject({ publishedVersion: last, lastError: null, attempts: 0 });
    await waitFor("the worker to log the catch-up", () =>
      publishedTo("us-west").includes(last) ? true : undefined,
    );
    expect(publishedTo("us-west").filter((version) => version > before)).toEqual(versions);
    await waitFor("the outbox to be drained", async () =>
      (await deps.db.outboxEvent.count({ where: { publishedAt: null } })) === 0 ? true : undefined,
    );
  });

  it("a limit is enforced per region: a customer hammering two regions gets each region's budget", async () => {
    const capacity = 24; // the last change above
    const hammer = async (gateway: GatewayProcess): Promise<number[]> => {
      const statuses: number[] = [];
      for (let index = 0; index < capacity + 6; index++) {
        const response = await fetch(`${gateway.url}/v1/things`, {
          headers: { authorization: "Bearer two-regions", "x-tier": "regional" },
        });
        await response.arrayBuffer();
        statuses.push(response.status);
      }
      return statuses;
    };
    const [west, east] = await Promise.all([
      hammer(region("eu-west").gateway),
      hammer(region("us-east").gateway),
    ]);
    for (const statuses of [west, east]) {
      expect(statuses.filter((status) => status === 200)).toHaveLength(capacity);
      expect(statuses.filter((status) => status === 429)).toHaveLength(6);
    }

    // Each region's counts are rolled up from its own Redis under its name; charts of every
    // region sum them.
    const later = Date.now() + 120_000;
    await waitFor(
      "both regions' counts to be flushed and rolled up",
      async () => {
        for (const name of NAMES) {
          const client = createRedis("control", { url: region(name).redis.url });
          if (client.status !== "ready") await once(client, "ready");
          await rollUpMetricMinutes(
            { db: deps.db, redis: client, prefix, clock: { nowMs: () => later }, region: name },
            { retentionDays: 30, readThroughMinute: Math.floor(Date.now() / 60_000) - 3 },
          );
          client.disconnect();
        }
        const rows = await listMetricMinutes(
          { fromMs: Date.now() - 600_000, toMs: later, scopes: ["tier:regional"] },
          deps,
        );
        const sum = (of: readonly MetricMinuteRecord[]) =>
          of.reduce((total, row) => total + row.allowed + row.rejected, 0);
        return sum(rows) === 2 * (capacity + 6) ? rows : undefined;
      },
      { timeoutMs: 60_000 },
    );
    const westRows = await listMetricMinutes(
      { fromMs: Date.now() - 600_000, toMs: later, scopes: ["tier:regional"], region: "eu-west" },
      deps,
    );
    expect(westRows.reduce((total, row) => total + row.allowed, 0)).toBe(capacity);
    expect(westRows.reduce((total, row) => total + row.rejected, 0)).toBe(6);
  });
});
