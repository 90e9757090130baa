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
 * At a million customers and overrides: every statement binds a fixed handful of parameters
 * (arrays through `unnest`, chunks of 5,000 rows), never one per row (Postgres and Prisma allow
 * 32,767 per statement); the compiled entries are staged in a temporary table and compared with
 * the stored set in SQL (`entry-set.ts`); `onProgress` is told each phase as it goes.
 */
import {
  canonicalJson,
  compileEntries,
  fieldErrorsFromZod,
  type ParseResult,
  parsePolicyDocument,
  sortPolicyDocument,
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
import { type PolicySummary, summarizeDocument, summarizeStoredPolicy } from "./policy-summary";
import {
  type ChangeReceipt,
  type NoChangeReceipt,
  runPolicyChangeOrNothing,
  type Tx,
} from "./run-policy-change";
import { currentIncidentWhere } from "./stored-policy";

/** Rows per statement: a million-row collection is written in bounded statements. */
const CHUNK = 5_000;

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
  return importParsedPolicy(parsePolicyDocument(document), context, deps, options);
}

/**
 * The same, for a document already through `parsePolicyDocument` (the API validates a large one
 * in a worker thread, lib/api/read-policy-document.ts, so that it does not stall the server).
 */
export async function importParsedPolicy(
  parsed: ParseResult<TPolicyDocument>,
  context: ChangeContext,
  deps: ControlDeps,
  options: ImportPolicyOptions = {},
): Promise<ImportPolicyResult> {
  const ctx = ZChangeContext.safeParse(context);
  const errors: FieldError[] = [
    ...(parsed.ok ? pastIncidents(parsed.value, deps.clock.nowMs()) : toFieldErrors(parsed.errors)),
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
  const doc = parsed.value;
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
      await refuseReusedIncidentIds(tx, doc, nowMs);
      await refuseImportOverStagedChanges(tx, doc, nowMs);
      const sorted = sortPolicyDocument(doc);
      const rowsChanged = await applyDocument(tx, sorted, { nowMs, actorName, report });
      const staged = await stageEntries(tx, compileEntries(sorted, nowMs), (done) =>
        report({ phase: "entries", done, total: 0 }),
      );
      const planned = await planStagedVersion(tx, staged, nowMs);
      const after = summarizeDocument(doc);
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
function pastIncidents(doc: TPolicyDocument, nowMs: number): FieldError[] {
  return doc.incidentOverrides.flatMap((incident, index) =>
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

async function refuseReusedIncidentIds(tx: Tx, doc: TPolicyDocument, nowMs: number): Promise<void> {
  const ids = doc.incidentOverrides.map((incident) => incident.id);
  const history = await tx.$queryRaw<{ id: string }[]>`
    SELECT "id" FROM "IncidentOverride"
    WHERE "id" = ANY(${ids}::text[])
      AND NOT ("revokedAt" IS NULL AND "expiresAt" > ${new Date(nowMs)})`;
  if (history.length === 0) return;
  const past = new Set(history.map((row) => row.id));
  throw validationError(
    doc.incidentOverrides.flatMap((incident, index) =>
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
async function applyDocument(tx: Tx, doc: TPolicyDocument, options: ApplyOptions): Promise<number> {
  // Order matters for the foreign keys: tiers and classes exist before customers and overrides
  // name them, and nothing is deleted while something still refers to it.
  let changed = 0;
  changed += await upsertTiers(tx, doc);
  changed += await upsertEndpointClasses(tx, doc);
  changed += await upsertCustomers(tx, doc, options);
  changed += await upsertSettings(tx, doc);
  changed += await replaceOverrides(tx, doc, options);
  changed += await replaceIncidents(tx, doc, options);
  changed += await replaceCandidates(tx, doc, options);
  changed += await replaceDescriptorRules(tx, doc.descriptorRules ?? []);
  changed += await replaceOutboundBudgets(tx, doc.outboundBudgets ?? []);
  changed +=
    await tx.$executeRaw`DELETE FROM "Customer" WHERE NOT ("id" = ANY(${doc.customers.map((customer) => customer.id)}::text[]))`;
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

async function upsertTiers(tx: Tx, doc: TPolicyDocument): Promise<number> {
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

async function upsertEndpointClasses(tx: Tx, doc: TPolicyDocument): Promise<number> {
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
 * Customers in bounded INSERT ... ON CONFLICT statements: new ones are inserted, changed ones
 * updated with version + 1, unchanged ones left alone. The registry is never loaded into memory.
 */
async function upsertCustomers(
  tx: Tx,
  doc: TPolicyDocument,
  options: ApplyOptions,
): Promise<number> {
  let changed = 0;
  for (let start = 0; start < doc.customers.length; start += CHUNK) {
    const chunk = doc.customers.slice(start, start + CHUNK);
    changed += await tx.$executeRaw`
      INSERT INTO "Customer" ("id", "displayName", "tier", "updatedAt")
      SELECT id, name, tier, now()
      FROM unnest(${chunk.map((c) => c.id)}::text[], ${chunk.map((c) => c.displayName)}::text[], ${chunk.map((c) => c.tier)}::text[]) AS t(id, name, tier)
      ON CONFLICT ("id") DO UPDATE
        SET "displayName" = EXCLUDED."displayName", "tier" = EXCLUDED."tier",
            "version" = "Customer"."version" + 1, "updatedAt" = now()
        WHERE ("Customer"."displayName", "Customer"."tier") IS DISTINCT FROM (EXCLUDED."displayName", EXCLUDED."tier")`;
    options.report({
      phase: "customers",
      done: Math.min(start + CHUNK, doc.customers.length),
      total: doc.customers.length,
    });
  }
  if (changed >= ANALYZE_FROM_CUSTOMERS) await tx.$executeRaw`ANALYZE "Customer"`;
  return changed;
}

async function upsertSettings(tx: Tx, doc: TPolicyDocument): Promise<number> {
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
 * Overrides in bounded statements: those the document omits are deleted (one statement, the
 * kept scopes as one array parameter), the rest inserted or, when their limit differs, updated
 * with version + 1 (jsonb equality: key order does not count).
 */
async function replaceOverrides(
  tx: Tx,
  doc: TPolicyDocument,
  options: ApplyOptions,
): Promise<number> {
  const scopes = doc.customerOverrides.map((override) =>
    overrideScope(override.customerId, override.endpointClass),
  );
  let changed = await tx.$executeRaw`
    DELETE FROM "CustomerOverride" WHERE NOT ("scope" = ANY(${scopes}::text[]))`;
  for (let start = 0; start < doc.customerOverrides.length; start += CHUNK) {
    const chunk = doc.customerOverrides.slice(start, start + CHUNK);
    changed += await tx.$executeRaw`
      INSERT INTO "CustomerOverride" ("scope", "customerId", "endpointClass", "limit", "updatedAt")
      SELECT s, c, e, l::jsonb, now()
      FROM unnest(
        ${scopes.slice(start, start + CHUNK)}::text[],
        ${chunk.map((override) => override.customerId)}::text[],
        ${chunk.map((override) => override.endpointClass)}::text[],
        ${chunk.map((override) => JSON.stringify(override.limit))}::text[]
      ) AS t(s, c, e, l)
      ON CONFLICT ("scope") DO UPDATE
        SET "limit" = EXCLUDED."limit", "version" = "CustomerOverride"."version" + 1,
            "updatedAt" = now()
        WHERE "CustomerOverride"."limit" IS DISTINCT FROM EXCLUDED."limit"`;
    options.report({
      phase: "overrides",
      done: Math.min(start + CHUNK, doc.customerOverrides.length),
      total: doc.customerOverrides.length,
    });
  }
  return changed;
}

async function replaceIncidents(
  tx: Tx,
  doc: TPolicyDocument,
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
  doc: TPolicyDocument,
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
