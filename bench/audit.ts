/**
 * Audit suite: the audit log page's query at a million entries. A scratch database
 * (`lp_bench_audit_<random>`, migrated like any other, so it has the same indexes and the same
 * append-only trigger, and dropped at the end) gets 1,000,000 `AuditEntry` rows from one
 * `INSERT ... SELECT generate_series` (an INSERT: the trigger only refuses UPDATE, DELETE and
 * TRUNCATE). Then the page's own service call, `listAuditEntries` (50 entries, as the API's
 * default; the page shows 25), is timed:
 *
 * - the first page, unfiltered;
 * - a deep page: the cursor of the 900,000th entry;
 * - filtered by actor (one of 20 operators: ~49k entries), first page and ~90% deep;
 * - filtered by customer (one of 5,000: ~160 entries).
 *
 * The competitor is OFFSET paging of the same rows at the same depth (`skip` in Prisma), measured
 * in the same run, same client, one after the other. Figures are medians and p95 over REPEATS
 * calls after a warm-up, in milliseconds of wall time around the call (Prisma included). For each
 * case the SQL Prisma actually sent is captured and run under `EXPLAIN (ANALYZE, BUFFERS)`: the
 * plan's scan node and the execution time Postgres reports are printed, and a case whose plan
 * reads the table without an index, or sorts, is flagged.
 *
 * `BENCH_AUDIT_ROWS` changes the row count (default 1,000,000).
 */
import { randomBytes } from "node:crypto";
import { availableParallelism, loadavg } from "node:os";
import { performance } from "node:perf_hooks";
import pg from "pg";
import {
  encodeAuditCursor,
  type ListAuditEntriesOptions,
  listAuditEntries,
} from "@/lib/control/audit/list-audit-entries";
import type { PrismaClient } from "@/lib/generated/prisma/client";
import { createPrisma } from "@/lib/server/db";
import { loadEnv } from "@/lib/server/env";
import { createDatabase, dropDatabase, withDatabase } from "../scripts/db/databases";
import { applyMigrations } from "../scripts/db/schema-engine";

const ROWS = Number(process.env.BENCH_AUDIT_ROWS ?? 1_000_000);
const PAGE = 50;
const REPEATS = 40;
const WARMUP = 5;
const ACTORS = 20;
const CUSTOMERS = 5_000;

/** 1,000,000 entries two seconds apart (about 23 days), ids in time order as in real life. */
function generateSql(rows: number): string {
  return `
INSERT INTO "AuditEntry"
  ("at", "actorType", "actorId", "actorName", "action", "entityType", "entityId", "customerId",
   "before", "after", "reason", "policyVersion")
SELECT
  timestamptz '2026-01-01T00:00:00Z' + i * interval '2 seconds',
  CASE WHEN i % 50 = 0 THEN 'system' ELSE 'operator' END,
  CASE WHEN i % 50 = 0 THEN NULL ELSE 'op-' || (i % ${ACTORS}) END,
  CASE WHEN i % 50 = 0 THEN 'worker' ELSE 'Operator ' || (i % ${ACTORS}) END,
  (ARRAY['override.update', 'override.create', 'incident.raise', 'customer.update', 'tier.update'])[1 + i % 5],
  (ARRAY['customer-override', 'customer-override', 'incident', 'customer', 'tier'])[1 + i % 5],
  CASE WHEN i % 5 = 4 THEN 'tier-' || (i % 7) ELSE 'customer:cust-' || (i % ${CUSTOMERS}) END,
  CASE WHEN i % 5 = 4 THEN NULL ELSE 'cust-' || (i % ${CUSTOMERS}) END,
  jsonb_build_object('limit', jsonb_build_object('algorithm', 'token-bucket', 'capacity', i % 1000, 'refillPerSec', 10)),
  jsonb_build_object('limit', jsonb_build_object('algorithm', 'token-bucket', 'capacity', i % 1000 + 10, 'refillPerSec', 10)),
  'bench change ' || i,
  CASE WHEN i % 3 = 0 THEN (i / 3)::int ELSE NULL END
FROM generate_series(1, ${rows}) AS i`;
}

interface Captured {
  query: string;
  params: string;
}

interface PlanNode {
  "Node Type": string;
  "Index Name"?: string;
  "Relation Name"?: string;
  Plans?: PlanNode[];
}

function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

function describePlan(node: PlanNode, depth = 0): string[] {
  const name = node["Index Name"]
    ? `${node["Node Type"]} using ${node["Index Name"]}`
    : node["Relation Name"]
      ? `${node["Node Type"]} on ${node["Relation Name"]}`
      : node["Node Type"];
  return [
    `${"  ".repeat(depth)}${name}`,
    ...(node.Plans ?? []).flatMap((child) => describePlan(child, depth + 1)),
  ];
}

function nodeTypes(node: PlanNode): string[] {
  return [node["Node Type"], ...(node.Plans ?? []).flatMap(nodeTypes)];
}

interface CaseResult {
  readonly name: string;
  readonly medianMs: number;
  readonly p95Ms: number;
  readonly ids: string;
}

class AuditBench {
  #captured: Captured | null = null;
  readonly db: PrismaClient;
  readonly databaseUrl: string;

  constructor(databaseUrl: string) {
    this.databaseUrl = databaseUrl;
    this.db = createPrisma({
      databaseUrl,
      poolSize: 1,
      onQuery: (event) => {
        this.#captured = { query: event.query, params: event.params };
      },
    });
  }

  /** Times `call` REPEATS times after WARMUP, and explains the SQL its last run sent. */
  async measure(name: string, call: () => Promise<readonly string[]>): Promise<CaseResult> {
    let ids: readonly string[] = [];
    for (let i = 0; i < WARMUP; i++) ids = await call();
    const timesMs: number[] = [];
    for (let i = 0; i < REPEATS; i++) {
      const startMs = performance.now();
      await call();
      timesMs.push(performance.now() - startMs);
    }
    this.#captured = null;
    await call();
    const captured = this.#captured as Captured | null;
    const result: CaseResult = {
      name,
      medianMs: percentile(timesMs, 50),
      p95Ms: percentile(timesMs, 95),
      ids: `${ids[0] ?? "-"}..${ids.at(-1) ?? "-"} (${ids.length})`,
    };
    console.log(
      `${name.padEnd(44)} median ${result.medianMs.toFixed(2).padStart(8)} ms   p95 ${result.p95Ms
        .toFixed(2)
        .padStart(8)} ms   rows ${result.ids}`,
    );
    if (captured !== null) await this.explain(captured);
    return result;
  }

  async explain(captured: Captured): Promise<void> {
    const client = new pg.Client({ connectionString: this.databaseUrl });
    await client.connect();
    try {
      const params: unknown[] = JSON.parse(captured.params);
      const { rows } = await client.query<{
        "QUERY PLAN": [{ Plan: PlanNode; "Execution Time": number }];
      }>(`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${captured.query}`, params);
      const plan = rows[0]?.["QUERY PLAN"][0];
      if (plan === undefined) return;
      const types = nodeTypes(plan.Plan);
      const usesIndex = types.some((type) => type.startsWith("Index"));
      const readsTable = types.includes("Seq Scan");
      const sorts = types.some((type) => type.includes("Sort"));
      const verdict =
        usesIndex && !readsTable && !sorts
          ? "index scan"
          : "NOT an ordered index scan: it sorts or reads the table";
      console.log(
        `    plan (${verdict}; Postgres execution ${plan["Execution Time"].toFixed(2)} ms):\n${describePlan(
          plan.Plan,
        )
          .map((line) => `      ${line}`)
          .join("\n")}`,
      );
    } finally {
      await client.end();
    }
  }
}

async function keysetAndOffset(
  bench: AuditBench,
  label: string,
  filter: ListAuditEntriesOptions,
  depth: number,
): Promise<void> {
  const where = {
    actorId: filter.actorId,
    customerId: filter.customerId,
  };
  const anchor = await bench.db.auditEntry.findMany({
    where,
    orderBy: [{ at: "desc" }, { id: "desc" }],
    skip: depth - 1,
    take: 1,
    select: { at: true, id: true },
  });
  const row = anchor[0];
  if (row === undefined) {
    console.log(`${label}: fewer than ${depth} entries; skipped`);
    return;
  }
  const cursor = encodeAuditCursor(row.at, row.id);
  const keyset = await bench.measure(
    `${label}, keyset after ${depth.toLocaleString("en")}`,
    async () =>
      (await listAuditEntries({ ...filter, cursor, limit: PAGE }, bench)).entries.map((e) => e.id),
  );
  const offset = await bench.measure(`${label}, OFFSET ${depth.toLocaleString("en")}`, async () =>
    (
      await bench.db.auditEntry.findMany({
        where,
        orderBy: [{ at: "desc" }, { id: "desc" }],
        skip: depth,
        take: PAGE,
        select: { id: true },
      })
    ).map((entry) => entry.id.toString()),
  );
  if (keyset.ids !== offset.ids) {
    console.log(`    !! keyset and OFFSET returned different rows: ${keyset.ids} vs ${offset.ids}`);
  }
  console.log(
    `    competitor: OFFSET is ${(offset.medianMs / keyset.medianMs).toFixed(1)}x the keyset median (${offset.medianMs.toFixed(2)} vs ${keyset.medianMs.toFixed(2)} ms)`,
  );
}

export async function run(): Promise<void> {
  console.log(
    `machine: ${availableParallelism()} cores, load ${loadavg()
      .map((value) => value.toFixed(2))
      .join(
        " ",
      )}; ${ROWS.toLocaleString("en")} entries; ${REPEATS} timed calls per case after ${WARMUP} warm-up`,
  );
  const databaseUrl = withDatabase(
    loadEnv().DATABASE_URL,
    `lp_bench_audit_${randomBytes(4).toString("hex")}`,
  );
  await createDatabase(databaseUrl);
  let bench: AuditBench | null = null;
  try {
    await applyMigrations(databaseUrl);
    const client = new pg.Client({ connectionString: databaseUrl });
    await client.connect();
    try {
      const startMs = performance.now();
      await client.query(generateSql(ROWS));
      await client.query(`ANALYZE "AuditEntry"`);
      console.log(
        `generated ${ROWS.toLocaleString("en")} entries with every index in place in ${((performance.now() - startMs) / 1000).toFixed(1)} s`,
      );
    } finally {
      await client.end();
    }
    const reads = new AuditBench(databaseUrl);
    bench = reads;
    const page = (options: ListAuditEntriesOptions) => async () =>
      (await listAuditEntries({ ...options, limit: PAGE }, reads)).entries.map((entry) => entry.id);

    console.log("\nfirst pages");
    await bench.measure("unfiltered, first page", page({}));
    await bench.measure("actor op-7, first page", page({ actorId: "op-7" }));
    await bench.measure("customer cust-42, first page", page({ customerId: "cust-42" }));
    // Entry i is a customer-override when i % 5 is 0 or 1, about cust-(i % 5000): cust-40's are.
    await bench.measure(
      "entity customer-override customer:cust-40",
      page({ entityType: "customer-override", entityId: "customer:cust-40" }),
    );
    await bench.measure("actor kind system, first page", page({ actorType: "system" }));

    console.log("\ndeep pages against OFFSET of the same depth");
    await keysetAndOffset(bench, "unfiltered", {}, Math.min(900_000, Math.floor(ROWS * 0.9)));
    const actorEntries = await bench.db.auditEntry.count({ where: { actorId: "op-7" } });
    await keysetAndOffset(bench, "actor op-7", { actorId: "op-7" }, Math.floor(actorEntries * 0.9));
    const customerEntries = await bench.db.auditEntry.count({ where: { customerId: "cust-42" } });
    await keysetAndOffset(
      bench,
      "customer cust-42",
      { customerId: "cust-42" },
      Math.max(1, Math.floor(customerEntries * 0.9)),
    );
  } finally {
    await bench?.db.$disconnect();
    await dropDatabase(databaseUrl);
    console.log("\nscratch database dropped");
  }
}
