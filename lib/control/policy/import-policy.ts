/**
 * Replaces the whole policy with a document, as ONE audited change (`policy.import`).
 *
 * All of the document is validated before anything is written (`parsePolicyDocument`: every
 * field, reference, duplicate, cost and guardrail), and every problem is reported by its position
 * and field (`tiers[3].limit.capacity`). Then, in one transaction, what differs is applied: an
 * entity present before and after keeps its history and gets version + 1 only if it changed (so
 * importing an unchanged file disturbs no one's edit in progress), new ones start at version 1,
 * and the rest is removed. Current incidents missing from the file are reverted, not deleted:
 * incident rows are the console's history. A document identical to the stored policy writes
 * nothing at all (no audit entry, no version) and says so (`isNoChange`).
 *
 * At a million customers and overrides: the document is sorted, compiled, hashed and summarized
 * before the transaction (`prepareImport`; for a large body, in the child process that validated
 * it), and the transaction sends prepared chunks of 5,000 rows, one statement each, never one
 * parameter per row (Postgres and Prisma allow 32,767 per statement). The keys kept are collected
 * in temporary tables as the chunks are written, so the rows the document leaves out are deleted
 * in one statement each; the compiled entries are staged and compared with the stored set in SQL
 * (`entry-set.ts`); `onProgress` is told each phase as it goes.
 */
import {
  canonicalJson,
  fieldErrorsFromZod,
  type ParseResult,
  parsePolicyDocument,
  type TPolicyDocument,
  ZDryRunCandidate,
  ZEndpointClass,
  ZIncidentOverride,
  ZTier,
} from "@limitplane/enforcer/policy";
import { candidateSelect } from "../candidate/candidate-record";
import { type ChangeContext, ZChangeContext } from "../change-context";
import { overrideScope } from "../customer-override/customer-override-record";
import type { ControlDeps } from "../deps";
import { replaceDescriptorRules } from "../descriptor-rule/descriptor-rule-rows";
import { endpointClassData, endpointClassSelect } from "../endpoint-class/endpoint-class-record";
import { type FieldError, toFieldErrors, validationError } from "../errors";
import { incidentData, incidentSelect } from "../incident/incident-record";
import { replaceOutboundBudgets } from "../outbound-budget/outbound-budget-rows";
import { refuseImportOverStagedChanges } from "../staged-change/refuse-import-over-staged";
import { jsonColumn, toJson } from "../stored";
import { tierData, tierSelect } from "../tier/tier-record";
import { planStagedVersion, stageEntries } from "./entry-set";
import { type PolicySummary, summarizeStoredPolicy } from "./policy-summary";
import {
  entriesAt,
  PREPARED_CHUNK_ROWS,
  type PreparedDocument,
  type PreparedImport,
  prepareImport,
} from "./prepare-import";
import {
  type ChangeReceipt,
  type NoChangeReceipt,
  runPolicyChangeOrNothing,
  type Tx,
} from "./run-policy-change";
import { currentIncidentWhere } from "./stored-policy";

/** One step of an import, for a progress display. */
export interface ImportProgress {
  readonly phase: "validated" | "customers" | "overrides" | "entries" | "written";
  /** Rows done in this phase, and its total, when it is counted. */
  readonly done: number;
  readonly total: number;
}

export interface ImportPolicyOptions {
  /** Told as each phase advances (a million-row import takes a while). */
  readonly onProgress?: (progress: ImportProgress) => void;
}

/** What an import returns: its summary and receipt, or that nothing differed. */
export type ImportPolicyResult = { readonly summary: PolicySummary } & (
  | ChangeReceipt
  | NoChangeReceipt
);

/**
 * From this many customers on, the import refreshes the table's statistics: without them the
 * planner misjudges the search's trigram conditions until autovacuum gets round to it.
 */
const ANALYZE_FROM_CUSTOMERS = 10_000;

export async function importPolicy(
  document: unknown,
  context: ChangeContext,
  deps: ControlDeps,
  options: ImportPolicyOptions = {},
): Promise<ImportPolicyResult> {
  const parsed = parsePolicyDocument(document);
  return importPreparedPolicy(
    parsed.ok ? { ok: true, value: prepareImport(parsed.value) } : parsed,
    context,
    deps,
    options,
  );
}

/**
 * The same, for a document already validated and prepared (`prepareImport`): the API does both
 * in a child process for a large one (lib/api/read-policy-document.ts), so that it does not stall
 * the server.
 */
export async function importPreparedPolicy(
  parsed: ParseResult<PreparedImport>,
  context: ChangeContext,
  deps: ControlDeps,
  options: ImportPolicyOptions = {},
): Promise<ImportPolicyResult> {
  const ctx = ZChangeContext.safeParse(context);
  const errors: FieldError[] = [
    ...(parsed.ok
      ? pastIncidents(parsed.value.asWritten.incidentOverrides, deps.clock.nowMs())
      : toFieldErrors(parsed.errors)),
    ...(ctx.success ? [] : toFieldErrors(fieldErrorsFromZod(ctx.error))),
  ];
  if (!parsed.ok || !ctx.success || errors.length > 0) {
    throw validationError(
      errors,
      errors.length === 1
        ? undefined
        : `The policy has ${errors.length} problems; nothing was imported. The first is ${errors[0]?.path}: ${errors[0]?.message}`,
    );
  }
  const prepared = parsed.value;
  const doc = prepared.document;
  const actorName = ctx.data.actor.name;
  const report = options.onProgress ?? (() => {});
  report({ phase: "validated", done: 1, total: 1 });
  return runPolicyChangeOrNothing(deps, ctx.data, {
    action: "policy.import",
    entityType: "policy",
    affectsSnapshot: true,
    focus: null,
    timeoutMs: 1_800_000,
    async write(tx, nowMs) {
      const before = await summarizeStoredPolicy(tx, nowMs);
      await refuseReusedIncidentIds(tx, prepared.asWritten.incidentOverrides, nowMs);
      await refuseImportOverStagedChanges(
        tx,
        { ...doc, dryRunCandidates: prepared.asWritten.dryRunCandidates },
        nowMs,
      );
      const rowsChanged = await applyDocument(tx, prepared, { nowMs, actorName, report });
      const staged = await stageEntries(tx, entriesAt(prepared, nowMs), (done) =>
        report({ phase: "entries", done, total: 0 }),
      );
      const planned = await planStagedVersion(tx, staged, nowMs);
      const after = prepared.summary;
      report({ phase: "written", done: 1, total: 1 });
      return {
        entityId: "policy",
        customerId: null,
        before,
        after,
        value: { summary: after },
        entries: { planned, wholeSetBytes: staged.bytes },
        isNoChange: rowsChanged === 0 && planned === null,
      };
    },
  });
}

/** An import holds current and future incidents; expired ones are history, in the audit log. */
function pastIncidents(
  incidents: TPolicyDocument["incidentOverrides"],
  nowMs: number,
): FieldError[] {
  return incidents.flatMap((incident, index) =>
    Date.parse(incident.expiresAt) <= nowMs
      ? [
          {
            path: `incidentOverrides[${index}].expiresAt`,
            message: `incident "${incident.id}" expired at ${incident.expiresAt}; remove it (expired incidents are history, kept in the audit log) or give a future expiry`,
          },
        ]
      : [],
  );
}

async function refuseReusedIncidentIds(
  tx: Tx,
  incidents: TPolicyDocument["incidentOverrides"],
  nowMs: number,
): Promise<void> {
  const ids = incidents.map((incident) => incident.id);
  const history = await tx.$queryRaw<{ id: string }[]>`
    SELECT "id" FROM "IncidentOverride"
    WHERE "id" = ANY(${ids}::text[])
      AND NOT ("revokedAt" IS NULL AND "expiresAt" > ${new Date(nowMs)})`;
  if (history.length === 0) return;
  const past = new Set(history.map((row) => row.id));
  throw validationError(
    incidents.flatMap((incident, index) =>
      past.has(incident.id)
        ? [
            {
              path: `incidentOverrides[${index}].id`,
              message: `incident id "${incident.id}" belongs to an incident that has expired or was reverted; give this one a new id`,
            },
          ]
        : [],
    ),
  );
}

interface ApplyOptions {
  readonly nowMs: number;
  readonly actorName: string;
  readonly report: (progress: ImportProgress) => void;
}

/** Whether `stored` (a parsed row, or null when unparseable) differs from `next`. */
function differs(stored: unknown, next: unknown): boolean {
  return stored === null || canonicalJson(stored) !== canonicalJson(next);
}

/** Parses a stored row for comparison; a damaged row counts as changed, and is rewritten. */
function parseOrNull<Output>(
  schema: { safeParse(value: unknown): { success: true; data: Output } | { success: false } },
  value: unknown,
): Output | null {
  const result = schema.safeParse(value);
  return result.success ? result.data : null;
}

/** Applies the document's differences; returns how many rows it inserted, updated or deleted. */
async function applyDocument(
  tx: Tx,
  prepared: PreparedImport,
  options: ApplyOptions,
): Promise<number> {
  // Order matters for the foreign keys: tiers and classes exist before customers and overrides
  // name them, and nothing is deleted while something still refers to it.
  const doc = prepared.document;
  let changed = 0;
  changed += await upsertTiers(tx, doc);
  changed += await upsertEndpointClasses(tx, doc);
  changed += await upsertCustomers(tx, prepared, options);
  changed += await upsertSettings(tx, doc);
  changed += await replaceOverrides(tx, doc, options);
  changed += await replaceIncidents(tx, doc, options);
  changed += await replaceCandidates(tx, doc, options);
  changed += await replaceDescriptorRules(tx, doc.descriptorRules ?? []);
  changed += await replaceOutboundBudgets(tx, doc.outboundBudgets ?? []);
  await tx.$executeRaw`ANALYZE "import_kept_customer"`;
  changed += await tx.$executeRaw`
    DELETE FROM "Customer" c
    WHERE NOT EXISTS (SELECT 1 FROM "import_kept_customer" k WHERE k."id" = c."id")`;
  changed += (
    await tx.endpointClass.deleteMany({
      where: { name: { notIn: doc.endpointClasses.map((endpointClass) => endpointClass.name) } },
    })
  ).count;
  changed += (
    await tx.tier.deleteMany({ where: { name: { notIn: doc.tiers.map((tier) => tier.name) } } })
  ).count;
  return changed;
}

async function upsertTiers(tx: Tx, doc: PreparedDocument): Promise<number> {
  const rows = await tx.tier.findMany({ select: tierSelect });
  const stored = new Map(rows.map((row) => [row.name, row]));
  let changed = 0;
  for (const tier of doc.tiers) {
    const row = stored.get(tier.name);
    if (row === undefined) {
      await tx.tier.create({
        data: { name: tier.name, ...tierData(tier) },
        select: { name: true },
      });
      changed++;
    } else if (
      differs(
        parseOrNull(ZTier, { name: row.name, displayName: row.displayName, limit: row.limit }),
        tier,
      )
    ) {
      await tx.tier.update({
        where: { name: tier.name },
        data: { ...tierData(tier), version: { increment: 1 } },
        select: { name: true },
      });
      changed++;
    }
  }
  return changed;
}

async function upsertEndpointClasses(tx: Tx, doc: PreparedDocument): Promise<number> {
  const rows = await tx.endpointClass.findMany({ select: endpointClassSelect });
  const stored = new Map(rows.map((row) => [row.name, row]));
  let changed = 0;
  for (const endpointClass of doc.endpointClasses) {
    const row = stored.get(endpointClass.name);
    const data = endpointClassData(endpointClass);
    if (row === undefined) {
      await tx.endpointClass.create({
        data: { name: endpointClass.name, ...data },
        select: { name: true },
      });
      changed++;
      continue;
    }
    const { version: _v, createdAt: _c, updatedAt: _u, ...fields } = row;
    if (differs(parseOrNull(ZEndpointClass, fields), endpointClass)) {
      await tx.endpointClass.update({
        where: { name: endpointClass.name },
        data: { ...data, version: { increment: 1 } },
        select: { name: true },
      });
      changed++;
    }
  }
  return changed;
}

/**
 * Customers, a prepared chunk a statement (INSERT ... ON CONFLICT): new ones are inserted, changed
 * ones updated with version + 1, unchanged ones left alone. Each chunk's ids are also kept in a
 * temporary table, from which `applyDocument` deletes the customers the document leaves out in
 * one statement. The registry is never loaded into memory.
 */
async function upsertCustomers(
  tx: Tx,
  prepared: PreparedImport,
  options: ApplyOptions,
): Promise<number> {
  await tx.$executeRaw`
    CREATE TEMPORARY TABLE "import_kept_customer" ("id" text NOT NULL) ON COMMIT DROP`;
  let changed = 0;
  let done = 0;
  for (const chunk of prepared.customerChunks) {
    changed += await tx.$executeRaw`
      WITH t AS (
        SELECT * FROM json_to_recordset(${chunk}::json) AS t("id" text, "displayName" text, "tier" text)
      ), kept AS (INSERT INTO "import_kept_customer" ("id") SELECT "id" FROM t)
      INSERT INTO "Customer" ("id", "displayName", "tier", "updatedAt")
      SELECT "id", "displayName", "tier", now() FROM t
      ON CONFLICT ("id") DO UPDATE
        SET "displayName" = EXCLUDED."displayName", "tier" = EXCLUDED."tier",
            "version" = "Customer"."version" + 1, "updatedAt" = now()
        WHERE ("Customer"."displayName", "Customer"."tier") IS DISTINCT FROM (EXCLUDED."displayName", EXCLUDED."tier")`;
    done = Math.min(done + PREPARED_CHUNK_ROWS, prepared.customerCount);
    options.report({ phase: "customers", done, total: prepared.customerCount });
  }
  if (changed >= ANALYZE_FROM_CUSTOMERS) await tx.$executeRaw`ANALYZE "Customer"`;
  return changed;
}

async function upsertSettings(tx: Tx, doc: PreparedDocument): Promise<number> {
  const next = {
    defaultTier: doc.defaultTier,
    defaultEndpointClass: doc.defaultEndpointClass,
    ceilings: toJson(doc.ceilings),
    guardrails: toJson(doc.guardrails),
  };
  // A document without mappings stores none: every domain then has the default mapping.
  const mappings = doc.descriptorMappings ?? null;
  const row = await tx.policySettings.findUnique({
    where: { id: 1 },
    select: {
      defaultTier: true,
      defaultEndpointClass: true,
      ceilings: true,
      guardrails: true,
      descriptorMappings: true,
    },
  });
  const data = { ...next, descriptorMappings: jsonColumn(mappings) };
  if (row === null) {
    await tx.policySettings.create({ data: { id: 1, ...data }, select: { id: true } });
    return 1;
  }
  const { descriptorMappings: storedMappings, ...storedRest } = row;
  if (!differs(storedRest, next) && canonicalJson(storedMappings) === canonicalJson(mappings)) {
    return 0;
  }
  await tx.policySettings.update({
    where: { id: 1 },
    data: { ...data, version: { increment: 1 } },
    select: { id: true },
  });
  return 1;
}

/**
 * Overrides in bounded statements: each chunk inserted or, when its limit differs, updated with
 * version + 1 (jsonb equality: key order does not count), its scopes kept in a temporary table;
 * then those the document omits are deleted in one statement.
 */
async function replaceOverrides(
  tx: Tx,
  doc: PreparedDocument,
  options: ApplyOptions,
): Promise<number> {
  await tx.$executeRaw`
    CREATE TEMPORARY TABLE "import_kept_override" ("scope" text NOT NULL) ON COMMIT DROP`;
  let changed = 0;
  for (let start = 0; start < doc.customerOverrides.length; start += PREPARED_CHUNK_ROWS) {
    const chunk = doc.customerOverrides.slice(start, start + PREPARED_CHUNK_ROWS);
    changed += await tx.$executeRaw`
      WITH t AS (
        SELECT * FROM unnest(
          ${chunk.map((override) => overrideScope(override.customerId, override.endpointClass))}::text[],
          ${chunk.map((override) => override.customerId)}::text[],
          ${chunk.map((override) => override.endpointClass)}::text[],
          ${chunk.map((override) => JSON.stringify(override.limit))}::text[]
        ) AS t(s, c, e, l)
      ), kept AS (INSERT INTO "import_kept_override" ("scope") SELECT s FROM t)
      INSERT INTO "CustomerOverride" ("scope", "customerId", "endpointClass", "limit", "updatedAt")
      SELECT s, c, e, l::jsonb, now() FROM t
      ON CONFLICT ("scope") DO UPDATE
        SET "limit" = EXCLUDED."limit", "version" = "CustomerOverride"."version" + 1,
            "updatedAt" = now()
        WHERE "CustomerOverride"."limit" IS DISTINCT FROM EXCLUDED."limit"`;
    options.report({
      phase: "overrides",
      done: Math.min(start + PREPARED_CHUNK_ROWS, doc.customerOverrides.length),
      total: doc.customerOverrides.length,
    });
  }
  await tx.$executeRaw`ANALYZE "import_kept_override"`;
  changed += await tx.$executeRaw`
    DELETE FROM "CustomerOverride" o
    WHERE NOT EXISTS (SELECT 1 FROM "import_kept_override" k WHERE k."scope" = o."scope")`;
  return changed;
}

async function replaceIncidents(
  tx: Tx,
  doc: PreparedDocument,
  options: ApplyOptions,
): Promise<number> {
  const rows = await tx.incidentOverride.findMany({
    where: currentIncidentWhere(options.nowMs),
    select: incidentSelect,
  });
  const desired = new Map(doc.incidentOverrides.map((incident) => [incident.id, incident]));
  const now = new Date(options.nowMs);
  let changed = 0;
  const omitted = rows.filter((row) => !desired.has(row.id)).map((row) => row.id);
  if (omitted.length > 0) {
    changed += (
      await tx.incidentOverride.updateMany({
        where: { id: { in: omitted } },
        data: { revokedAt: now, revokedBy: options.actorName, version: { increment: 1 } },
      })
    ).count;
  }
  const stored = new Map(rows.map((row) => [row.id, row]));
  const created: TPolicyDocument["incidentOverrides"][number][] = [];
  for (const incident of doc.incidentOverrides) {
    const row = stored.get(incident.id);
    if (row === undefined) {
      created.push(incident);
      continue;
    }
    const definition = {
      id: row.id,
      customerId: row.customerId,
      endpointClass: row.endpointClass,
      factor: row.factor,
      limit: row.limit,
      startsAt: row.startsAt.toISOString(),
      expiresAt: row.expiresAt.toISOString(),
      owner: row.owner,
      reason: row.reason,
      ticketUrl: row.ticketUrl,
    };
    if (differs(parseOrNull(ZIncidentOverride, definition), incident)) {
      await tx.incidentOverride.update({
        where: { id: incident.id },
        data: { ...incidentData(incident), version: { increment: 1 } },
        select: { id: true },
      });
      changed++;
    }
  }
  // At most 10,000 incidents; 1,000 rows of 12 columns per statement stay far below 32,767.
  for (let start = 0; start < created.length; start += 1_000) {
    changed += (
      await tx.incidentOverride.createMany({
        data: created.slice(start, start + 1_000).map((incident) => ({
          id: incident.id,
          ...incidentData(incident),
          createdBy: options.actorName,
        })),
      })
    ).count;
  }
  return changed;
}

async function replaceCandidates(
  tx: Tx,
  doc: PreparedDocument,
  options: ApplyOptions,
): Promise<number> {
  let changed = (
    await tx.dryRunCandidate.deleteMany({
      where: { id: { notIn: doc.dryRunCandidates.map((candidate) => candidate.id) } },
    })
  ).count;
  const rows = await tx.dryRunCandidate.findMany({ select: candidateSelect });
  const stored = new Map(rows.map((row) => [row.id, row]));
  for (const candidate of doc.dryRunCandidates) {
    const row = stored.get(candidate.id);
    const data = { target: candidate.target, limit: toJson(candidate.limit) };
    if (row === undefined) {
      await tx.dryRunCandidate.create({
        data: { id: candidate.id, ...data, createdBy: options.actorName },
        select: { id: true },
      });
      changed++;
    } else if (
      differs(
        parseOrNull(ZDryRunCandidate, { id: row.id, target: row.target, limit: row.limit }),
        candidate,
      )
    ) {
      await tx.dryRunCandidate.update({
        where: { id: candidate.id },
        data: { ...data, version: { increment: 1 } },
        select: { id: true },
      });
      changed++;
    }
  }
  return changed;
}
