/**
 * Customers the gateways see, end to end in process: an enforcer reports the identified customers
 * it decides for (with their tier; never addresses; hostile ids and tiers neither written nor
 * crashing anything; at most its cap an hour, the rest counted), the console lists the ones the
 * registry lacks, and raising an incident or an override for one registers it in the same
 * transaction, with its own audit entry, or not at all.
 */
import { randomBytes } from "node:crypto";
import { createEnforcer, type Enforcer, type EnforcerOptions } from "@limitplane/enforcer";
import { MemoryStore } from "@limitplane/enforcer/limiter";
import { seenCustomerNames } from "@limitplane/enforcer/publication";
import { Redis } from "ioredis";
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from "vitest";
import { createCustomerOverride } from "@/lib/control/customer-override/create-customer-override";
import type { ControlDeps, SeenCustomerDeps } from "@/lib/control/deps";
import { raiseIncident } from "@/lib/control/incident/raise-incident";
import { getSeenCustomer } from "@/lib/control/seen-customer/get-seen-customer";
import { listSeenCustomers } from "@/lib/control/seen-customer/list-seen-customers";
import { systemClock } from "@/lib/server/composition";
import {
  countEverything,
  depsFor,
  importExamplePolicy,
  latestAuditEntries,
  operatorContext,
} from "./helpers/policy-fixtures";
import { provideTestDatabase } from "./helpers/test-database";

const redisUrl = inject("redisUrl");
const database = provideTestDatabase();
let redis: Redis;
let deps: ControlDeps;
const running: Enforcer[] = [];

beforeAll(async () => {
  redis = new Redis(redisUrl);
  deps = depsFor(database.current().db);
  await importExamplePolicy(deps);
});

afterEach(async () => {
  await Promise.all(running.splice(0).map((enforcer) => enforcer.stop()));
});

afterAll(() => {
  redis.disconnect();
});

function freshPrefix(): string {
  return `${process.env.REDIS_KEY_PREFIX}seen-${randomBytes(4).toString("hex")}:`;
}

function seenDeps(prefix: string): SeenCustomerDeps {
  return { db: deps.db, redis, prefix, clock: systemClock };
}

async function start(prefix: string, options: Partial<EnforcerOptions> = {}): Promise<Enforcer> {
  const enforcer = await createEnforcer({
    expectedGateways: 1,
    store: () => new MemoryStore(),
    logger: { log: () => undefined },
    ...options,
    redis: { url: redisUrl, keyPrefix: prefix },
    controlPlane: { startupWaitMs: 50 },
    reporting: { metricsFlushIntervalMs: 50, ...options.reporting },
  });
  running.push(enforcer);
  return enforcer;
}

const request = (customerId: string | null, tier: string | null = null) => ({
  customerId,
  tier,
  method: "GET",
  path: "/v1/things",
  clientAddress: "203.0.113.9",
});

describe("the enforcer's seen-customer report", () => {
  it("reports identified customers with their tier, never an address, and skips hostile ids and tiers", async () => {
    const prefix = freshPrefix();
    const enforcer = await start(prefix);
    await enforcer.check(request("hooli", "pro"));
    await enforcer.check(request("hooli", "pro"));
    await enforcer.check(request("vandelay", "not a tier\r\n"));
    await enforcer.check(request(null)); // anonymous: keyed by address, not a customer
    for (const hostile of ["../../x", "a b", "{slot}", `x${"y".repeat(200)}`, "\u202eevil"]) {
      await expect(enforcer.check(request(hostile, "pro"))).rejects.toThrow(TypeError);
    }
    await enforcer.stop(); // flushes

    const names = seenCustomerNames(prefix);
    expect((await redis.zrange(names.customers, "0", "-1")).sort()).toEqual(["hooli", "vandelay"]);
    expect(Object.keys(await redis.hgetall(names.customer("hooli")))).toEqual(["pro"]);
    expect(Object.keys(await redis.hgetall(names.customer("vandelay")))).toEqual(["-"]);
    expect(await redis.keys(`${prefix}seen:customer:*`)).toHaveLength(2);
    expect(await redis.pttl(names.customer("hooli"))).toBeGreaterThan(0);

    const hooli = await getSeenCustomer("hooli", seenDeps(prefix));
    expect(hooli).toMatchObject({ id: "hooli", reportedTier: "pro" });
    const vandelay = await getSeenCustomer("vandelay", seenDeps(prefix));
    expect(vandelay).toMatchObject({ reportedTier: null, reportedTiers: [{ tier: null }] });
  });

  it("reports at most its cap of customers an hour and counts the rest, which the console shows", async () => {
    const prefix = freshPrefix();
    const enforcer = await start(prefix, {
      reporting: { seenCustomers: { maxCustomersPerHour: 5 } },
    });
    for (let index = 0; index < 40; index++) {
      await enforcer.check(request(`key-${String(index).padStart(2, "0")}`, "free"));
    }
    // Past the cap, an id the engine refuses is still refused, and not counted as a sighting.
    for (const hostile of ["../../x", "a b", "{slot}"]) {
      await expect(enforcer.check(request(hostile, "free"))).rejects.toThrow(TypeError);
    }
    await enforcer.stop();
    const names = seenCustomerNames(prefix);
    expect(await redis.zcard(names.customers)).toBe(5);
    const page = await listSeenCustomers({ limit: 50 }, seenDeps(prefix));
    expect(page.customers.map((customer) => customer.id).sort()).toEqual([
      "key-00",
      "key-01",
      "key-02",
      "key-03",
      "key-04",
    ]);
    expect(page.unreported).toEqual({ total: 35, enforcers: 1 });
  });

  it("lists only customers the registry lacks, matching the start of the id", async () => {
    const prefix = freshPrefix();
    const enforcer = await start(prefix);
    // acme and initech are in the example registry.
    for (const id of ["acme", "initech", "hooli", "hooligan", "vandelay"]) {
      await enforcer.check(request(id, "pro"));
    }
    await enforcer.stop();
    const all = await listSeenCustomers({}, seenDeps(prefix));
    expect(all.customers.map((customer) => customer.id).sort()).toEqual([
      "hooli",
      "hooligan",
      "vandelay",
    ]);
    const matching = await listSeenCustomers({ search: "HOOL", limit: 1 }, seenDeps(prefix));
    expect(matching.customers).toHaveLength(1);
    expect(matching.hasMore).toBe(true);
    await expect(listSeenCustomers({ search: "a\u0000b" }, seenDeps(prefix))).rejects.toMatchObject(
      { code: "VALIDATION_FAILED" },
    );
  });
});

describe("registering a seen-only customer with the change that needs it", () => {
  async function seen(prefix: string, customerId: string, tier: string | null): Promise<void> {
    const enforcer = await start(prefix);
    await enforcer.check(request(customerId, tier));
    await enforcer.stop();
  }

  it("an incident raise registers the customer with the reported tier: two audit entries, one transaction", async () => {
    const prefix = freshPrefix();
    const id = `hooli-${randomBytes(3).toString("hex")}`;
    await seen(prefix, id, "pro");
    const before = await countEverything(deps.db);
    const raised = await raiseIncident(
      { customerId: id, factor: 3, durationMs: 900_000 },
      operatorContext("hooli is backfilling"),
      deps,
      seenDeps(prefix),
    );
    expect(raised.policyVersion).not.toBeNull();
    const after = await countEverything(deps.db);
    expect(after.audit).toBe((before.audit ?? 0) + 2);
    const customer = await deps.db.customer.findUnique({ where: { id } });
    expect(customer).toMatchObject({ id, displayName: id, tier: "pro" });
    const [raise, register] = await latestAuditEntries(deps.db, 2);
    expect(register).toMatchObject({
      action: "customer.create",
      entityId: id,
      customerId: id,
      reason: "hooli is backfilling",
      actorName: "Dana Operator",
      before: null,
      after: { id, tier: "pro", registeredFrom: "gateway-report", reportedTier: "pro" },
      policyVersion: null,
    });
    expect(raise).toMatchObject({ action: "incident.raise", customerId: id });
  });

  it("a tier gateways report that the policy lacks registers the default tier", async () => {
    const prefix = freshPrefix();
    const id = `gold-${randomBytes(3).toString("hex")}`;
    await seen(prefix, id, "platinum");
    await createCustomerOverride(
      {
        customerId: id,
        endpointClass: null,
        limit: { algorithm: "token-bucket", capacity: 500, refillPerSec: 50 },
      },
      operatorContext("contract signed"),
      deps,
      seenDeps(prefix),
    );
    const settings = await deps.db.policySettings.findUniqueOrThrow({ where: { id: 1 } });
    const customer = await deps.db.customer.findUniqueOrThrow({ where: { id } });
    expect(customer.tier).toBe(settings.defaultTier);
    const [override, register] = await latestAuditEntries(deps.db, 2);
    expect(override?.action).toBe("override.create");
    expect(register).toMatchObject({
      action: "customer.create",
      after: { reportedTier: "platinum", registeredFrom: "gateway-report" },
    });
  });

  it("a refused raise registers nothing", async () => {
    const prefix = freshPrefix();
    const id = `refused-${randomBytes(3).toString("hex")}`;
    await seen(prefix, id, "pro");
    const before = await countEverything(deps.db);
    await expect(
      raiseIncident(
        { customerId: id, factor: 50, durationMs: 900_000 },
        operatorContext(),
        deps,
        seenDeps(prefix),
      ),
    ).rejects.toMatchObject({ code: "VALIDATION_FAILED" });
    expect(await countEverything(deps.db)).toEqual(before);
    expect(await deps.db.customer.findUnique({ where: { id } })).toBeNull();
  });

  it("a customer no gateway reported is not registered: an override for it is refused", async () => {
    const prefix = freshPrefix();
    const before = await countEverything(deps.db);
    await expect(
      createCustomerOverride(
        {
          customerId: "never-seen",
          endpointClass: null,
          limit: { algorithm: "token-bucket", capacity: 500, refillPerSec: 50 },
        },
        operatorContext(),
        deps,
        seenDeps(prefix),
      ),
    ).rejects.toMatchObject({ code: "NOT_FOUND" });
    expect(await countEverything(deps.db)).toEqual(before);
  });
});
