import { randomBytes } from "node:crypto";
import { performance } from "node:perf_hooks";
import { createRedisClient } from "@limitplane/enforcer/publication";
import { raiseIncident } from "@/lib/control/incident/raise-incident";
import { importPolicy } from "@/lib/control/policy/import-policy";
import { createPrisma } from "@/lib/server/db";
import { examplePolicyForSeed } from "../scripts/seed";
import { createDatabase, dropDatabase, withDatabase } from "../scripts/db/databases";
import { applyMigrations } from "../scripts/db/schema-engine";

const url = withDatabase("postgresql://postgres@127.0.0.1:5432/postgres", `lp_prof_${randomBytes(3).toString("hex")}`);
await createDatabase(url); await applyMigrations(url);
let queries: { query: string; durationMs: number }[] = [];
const db = createPrisma({ databaseUrl: url, poolSize: 4, onQuery: (q) => queries.push(q) });
const redis = createRedisClient("control", { url: "redis://127.0.0.1:6379/0" });
const prefix = `lpprof:${randomBytes(3).toString("hex")}:`;
const deps = { db, publisher: { db, redis, prefix }, nowMs: Date.now };
await importPolicy(examplePolicyForSeed(Date.now()), { actor: { type: "system", id: null, name: "p" }, reason: "p" }, deps);
for (let i = 0; i < 6; i++) {
  queries = [];
  const t = performance.now();
  await raiseIncident({ customerId: "globex", endpointClass: null, factor: 2, durationMs: 60_000 + i * 1000, startsAt: new Date(Date.now() + i * 7_200_000).toISOString() }, { actor: { type: "system", id: null, name: "p" }, reason: "p" }, deps);
  const total = performance.now() - t;
  const dbMs = queries.reduce((s, q) => s + q.durationMs, 0);
  console.log(`raise ${total.toFixed(1)} ms, ${queries.length} queries, ${dbMs} ms in db`);
  if (i === 5) for (const q of queries) console.log(q.durationMs, q.query.slice(0, 110).replace(/\s+/g, " "));
}
await db.$disconnect(); redis.disconnect(); await dropDatabase(url);
