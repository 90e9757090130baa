/**
 * Replaces the whole policy with a document, as ONE audited change (`policy.import`).
 *
 * All of the document is validated before anything is written (`parsePolicyDocument`: every
 * field, reference, duplicate, cost and guardrail), and every problem is reported by its position
 * and field (`tiers[3].limit.capacity`). Then, in one transaction, what differs is applied: an
 * entity present before and after keeps its history and gets version + 1 only if it changed (so
 * importing an unchanged file disturbs no one's edit in progress), new ones start at version 1,
 * and the rest is removed. Current incidents missing from the file are reverted, not deleted:
 * incident rows are the console's history.
 */
import {
  canonicalJson,
  fieldErrorsFromZod,
  parsePolicyDocument,
  sortPolicyDocument,
  type TPolicyDocument,
  ZCustomerOverride,
  ZDryRunCandidate,
  ZEndpointClass,
  ZIncidentOverride,
  ZTier,
} from "@limitplane/enforcer/policy";
import { candidateSelect } from "../candidate/candidate-record";
import { type ChangeContext, ZChangeContext } from "../change-context";
import { type ControlDeps, getControlDeps } from "../control-deps";
import {
  customerOverrideSelect,
  overrideScope,
} from "../customer-override/customer-override-record";
import { endpointClassData, endpointClassSelect } from "../endpoint-class/endpoint-class-record";
import { type FieldError, toFieldErrors, validationError } from "../errors";
import { incidentData, incidentSelect } from "../incident/incident-record";
import { toJson } from "../stored";
import { tierData, tierSelect } from "../tier/tier-record";
import { type PolicySummary, summarizeDocument, summarizeStoredPolicy } from "./policy-summary";
import { type ChangeReceipt, runPolicyChange, type Tx } from "./run-policy-change";
import { currentIncidentWhere } from "./stored-policy";

/** Customers per INSERT: a million-customer file is written in bounded statements. */
const CUSTOMER_CHUNK = 5_000;

/**
 * From this many customers on, the import refreshes the table's statistics: without them the
 * planner misjudges the search's trigram conditions until autovacuum gets round to it.
 */
const ANALYZE_FROM_CUSTOMERS = 10_000;

export async function importPolicy(
  document: unknown,
  context: ChangeContext,
  deps: ControlDeps = getControlDeps(),
): Promise<{ readonly summary: PolicySummary } & ChangeReceipt> {
  const parsed = parsePolicyDocument(document);
  const ctx = ZChangeContext.safeParse(context);
  const errors: FieldError[] = [
    ...(parsed.ok ? pastIncidents(parsed.value, deps.nowMs()) : toFieldErrors(parsed.errors)),
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
  return runPolicyChange(deps, ctx.data, {
    action: "policy.import",
    entityType: "policy",
    affectsSnapshot: true,
    focus: null,
    timeoutMs: 300_000,
    async write(tx, nowMs) {
      const before = await summarizeStoredPolicy(tx, nowMs);
      await refuseReusedIncidentIds(tx, doc, nowMs);
      await applyDocument(tx, sortPolicyDocument(doc), { nowMs, actorName });
      const after = summarizeDocument(doc);
      return {
        entityId: "policy",
        customerId: null,
        before,
        after,
        value: { summary: after },
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
  const history = await tx.incidentOverride.findMany({
    where: { id: { in: ids }, NOT: currentIncidentWhere(nowMs) },
    select: { id: true },
  });
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

async function applyDocument(tx: Tx, doc: TPolicyDocument, options: ApplyOptions): Promise<void> {
  // Order matters for the foreign keys: tiers and classes exist before customers and overrides
  // name them, and nothing is deleted while something still refers to it.
  await upsertTiers(tx, doc);
  await upsertEndpointClasses(tx, doc);
  await upsertCustomers(tx, doc);
  await upsertSettings(tx, doc);
  await replaceOverrides(tx, doc);
  await replaceIncidents(tx, doc, options);
  await replaceCandidates(tx, doc, options);
  await tx.$executeRaw`DELETE FROM "Customer" WHERE NOT ("id" = ANY(${doc.customers.map((customer) => customer.id)}::text[]))`;
  await tx.endpointClass.deleteMany({
    where: { name: { notIn: doc.endpointClasses.map((endpointClass) => endpointClass.name) } },
  });
  await tx.tier.deleteMany({ where: { name: { notIn: doc.tiers.map((tier) => tier.name) } } });
}

async function upsertTiers(tx: Tx, doc: TPolicyDocument): Promise<void> {
  const rows = await tx.tier.findMany({ select: tierSelect });
  const stored = new Map(rows.map((row) => [row.name, row]));
  for (const tier of doc.tiers) {
    const row = stored.get(tier.name);
    if (row === undefined) {
      await tx.tier.create({
        data: { name: tier.name, ...tierData(tier) },
        select: { name: true },
      });
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
    }
  }
}

async function upsertEndpointClasses(tx: Tx, doc: TPolicyDocument): Promise<void> {
  const rows = await tx.endpointClass.findMany({ select: endpointClassSelect });
  const stored = new Map(rows.map((row) => [row.name, row]));
  for (const endpointClass of doc.endpointClasses) {
    const row = stored.get(endpointClass.name);
    const data = endpointClassData(endpointClass);
    if (row === undefined) {
      await tx.endpointClass.create({
        data: { name: endpointClass.name, ...data },
        select: { name: true },
      });
      continue;
    }
    const { version: _v, createdAt: _c, updatedAt: _u, ...fields } = row;
    if (differs(parseOrNull(ZEndpointClass, fields), endpointClass)) {
      await tx.endpointClass.update({
        where: { name: endpointClass.name },
        data: { ...data, version: { increment: 1 } },
        select: { name: true },
      });
    }
  }
}

/**
 * Customers in bounded INSERT ... ON CONFLICT statements: new ones are inserted, changed ones
 * updated with version + 1, unchanged ones left alone. The registry is never loaded into memory.
 */
async function upsertCustomers(tx: Tx, doc: TPolicyDocument): Promise<void> {
  for (let start = 0; start < doc.customers.length; start += CUSTOMER_CHUNK) {
    const chunk = doc.customers.slice(start, start + CUSTOMER_CHUNK);
    await tx.$executeRaw`
      INSERT INTO "Customer" ("id", "displayName", "tier", "updatedAt")
      SELECT id, name, tier, now()
      FROM unnest(${chunk.map((c) => c.id)}::text[], ${chunk.map((c) => c.displayName)}::text[], ${chunk.map((c) => c.tier)}::text[]) AS t(id, name, tier)
      ON CONFLICT ("id") DO UPDATE
        SET "displayName" = EXCLUDED."displayName", "tier" = EXCLUDED."tier",
            "version" = "Customer"."version" + 1, "updatedAt" = now()
        WHERE ("Customer"."displayName", "Customer"."tier") IS DISTINCT FROM (EXCLUDED."displayName", EXCLUDED."tier")`;
  }
  if (doc.customers.length >= ANALYZE_FROM_CUSTOMERS) await tx.$executeRaw`ANALYZE "Customer"`;
}

async function upsertSettings(tx: Tx, doc: TPolicyDocument): Promise<void> {
  const next = {
    defaultTier: doc.defaultTier,
    defaultEndpointClass: doc.defaultEndpointClass,
    ceilings: toJson(doc.ceilings),
    guardrails: toJson(doc.guardrails),
  };
  const row = await tx.policySettings.findUnique({
    where: { id: 1 },
    select: { defaultTier: true, defaultEndpointClass: true, ceilings: true, guardrails: true },
  });
  if (row === null) {
    await tx.policySettings.create({ data: { id: 1, ...next }, select: { id: true } });
  } else if (differs(row, next)) {
    await tx.policySettings.update({
      where: { id: 1 },
      data: { ...next, version: { increment: 1 } },
      select: { id: true },
    });
  }
}

async function replaceOverrides(tx: Tx, doc: TPolicyDocument): Promise<void> {
  const desired = doc.customerOverrides.map((override) => ({
    scope: overrideScope(override.customerId, override.endpointClass),
    override,
  }));
  await tx.customerOverride.deleteMany({
    where: { scope: { notIn: desired.map((item) => item.scope) } },
  });
  const rows = await tx.customerOverride.findMany({ select: customerOverrideSelect });
  const stored = new Map(rows.map((row) => [row.scope, row]));
  for (const { scope, override } of desired) {
    const row = stored.get(scope);
    if (row === undefined) {
      await tx.customerOverride.create({
        data: {
          scope,
          customerId: override.customerId,
          endpointClass: override.endpointClass,
          limit: toJson(override.limit),
        },
        select: { scope: true },
      });
    } else if (
      differs(
        parseOrNull(ZCustomerOverride, {
          customerId: row.customerId,
          endpointClass: row.endpointClass,
          limit: row.limit,
        }),
        override,
      )
    ) {
      await tx.customerOverride.update({
        where: { scope },
        data: { limit: toJson(override.limit), version: { increment: 1 } },
        select: { scope: true },
      });
    }
  }
}

async function replaceIncidents(
  tx: Tx,
  doc: TPolicyDocument,
  options: ApplyOptions,
): Promise<void> {
  const rows = await tx.incidentOverride.findMany({
    where: currentIncidentWhere(options.nowMs),
    select: incidentSelect,
  });
  const desired = new Map(doc.incidentOverrides.map((incident) => [incident.id, incident]));
  const now = new Date(options.nowMs);
  for (const row of rows) {
    if (desired.has(row.id)) continue;
    await tx.incidentOverride.update({
      where: { id: row.id },
      data: { revokedAt: now, revokedBy: options.actorName, version: { increment: 1 } },
      select: { id: true },
    });
  }
  const stored = new Map(rows.map((row) => [row.id, row]));
  for (const incident of doc.incidentOverrides) {
    const row = stored.get(incident.id);
    if (row === undefined) {
      await tx.incidentOverride.create({
        data: { id: incident.id, ...incidentData(incident), createdBy: options.actorName },
        select: { id: true },
      });
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
    }
  }
}

async function replaceCandidates(
  tx: Tx,
  doc: TPolicyDocument,
  options: ApplyOptions,
): Promise<void> {
  await tx.dryRunCandidate.deleteMany({
    where: { id: { notIn: doc.dryRunCandidates.map((candidate) => candidate.id) } },
  });
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
    }
  }
}
