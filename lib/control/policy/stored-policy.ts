/**
 * The policy as stored, or the slice of it a change touches, assembled into a policy document so
 * @limitplane/enforcer/policy validates it with the same rules as a whole document. The core
 * (tiers, endpoint classes, settings, candidates: a few hundred rows at most) is always read;
 * of the large collections, only the scope's part:
 *
 * - `customer`: one customer, its overrides and current incidents: every rule that relates a
 *   customer's entries to one another (duplicates, incident overlaps, guardrails against the limit
 *   an incident replaces, costs) holds within it;
 * - `core`: every current incident (at most 10,000) with its customer and that customer's
 *   overrides (guardrails and costs depend on the core), and any overrides named (those a cost
 *   change might break, found by `overridesBelowCost`);
 * - `all`: everything (tests and small tools; export streams instead).
 */

import {
  type FieldPath,
  formatFieldErrors,
  formatFieldPath,
  type PolicyFieldError,
  parsePolicyDocument,
  type TPolicyDocument,
} from "@limitplane/enforcer/policy";
import type { Prisma } from "@/lib/generated/prisma/client";
import { candidateDocumentOf, candidateDocumentSelect } from "../candidate/candidate-record";
import { customerDocumentSelect } from "../customer/customer-record";
import { customerOverrideDocumentSelect } from "../customer-override/customer-override-record";
import {
  descriptorRuleDocument,
  descriptorRuleDocumentSelect,
} from "../descriptor-rule/descriptor-rule-record";
import { endpointClassDocumentSelect } from "../endpoint-class/endpoint-class-record";
import { type AppError, type FieldError, validationError } from "../errors";
import { incidentDocumentSelect } from "../incident/incident-record";
import { outboundBudgetDocumentSelect } from "../outbound-budget/outbound-budget-record";
import type { Db } from "../stored";
import { tierDocumentSelect } from "../tier/tier-record";

export type { Db };

const POLICY_COLLECTIONS = [
  "tiers",
  "endpointClasses",
  "customers",
  "customerOverrides",
  "incidentOverrides",
  "dryRunCandidates",
  "descriptorRules",
  "outboundBudgets",
] as const;
export type PolicyCollection = (typeof POLICY_COLLECTIONS)[number];

/** One entity of the policy: an item of a collection, or the settings. */
export type PolicyEntityRef =
  | { readonly collection: PolicyCollection; readonly id: string }
  | { readonly collection: "settings" };

export interface StoredPolicy {
  /** The document as stored, unparsed: what `parsePolicyDocument` is given. */
  readonly input: Record<string, unknown>;
  /** Each collection's keys, by position in `input`, to name entities in error messages. */
  readonly keys: Readonly<Record<PolicyCollection, readonly string[]>>;
}

/** The incidents that belong to the policy at `nowMs`: not reverted and not yet expired. */
export function currentIncidentWhere(nowMs: number): Prisma.IncidentOverrideWhereInput {
  return { revokedAt: null, expiresAt: { gt: new Date(nowMs) } };
}

/** Which part of the large collections to read (see the header). */
export type PolicyReadScope =
  | { readonly kind: "all" }
  | { readonly kind: "customer"; readonly customerId: string }
  | { readonly kind: "core"; readonly overrideScopes?: readonly string[] };

export interface ReadStoredPolicyOptions {
  readonly nowMs: number;
  /** @default { kind: "all" } */
  readonly scope?: PolicyReadScope;
  /** `referenced`: only customers that overrides or incidents name; `all`: the whole registry. */
  readonly customers: "referenced" | "all";
  /**
   * The entity being changed, placed last in its collection: the document's duplicate rules
   * report the later of two entries, so they then point at the change rather than at what it
   * collides with.
   */
  readonly last?: PolicyEntityRef | null;
}

function placeLast<Item>(items: Item[], isLast: (item: Item) => boolean): Item[] {
  return [...items.filter((item) => !isLast(item)), ...items.filter(isLast)];
}

/** The stored policy, or null when there is none yet (no settings row). */
export async function readStoredPolicy(
  db: Db,
  options: ReadStoredPolicyOptions,
): Promise<StoredPolicy | null> {
  const settings = await db.policySettings.findUnique({
    where: { id: 1 },
    select: {
      defaultTier: true,
      defaultEndpointClass: true,
      ceilings: true,
      guardrails: true,
      descriptorMappings: true,
    },
  });
  if (settings === null) return null;
  const scope = options.scope ?? { kind: "all" };
  const incidentWhere: Prisma.IncidentOverrideWhereInput =
    scope.kind === "customer"
      ? { ...currentIncidentWhere(options.nowMs), customerId: scope.customerId }
      : currentIncidentWhere(options.nowMs);
  const incidents = await db.incidentOverride.findMany({
    where: incidentWhere,
    orderBy: [{ startsAt: "asc" }, { id: "asc" }],
    select: incidentDocumentSelect,
  });
  const overrideWhere: Prisma.CustomerOverrideWhereInput | undefined =
    scope.kind === "all"
      ? undefined
      : scope.kind === "customer"
        ? { customerId: scope.customerId }
        : {
            OR: [
              {
                customerId: { in: [...new Set(incidents.map((incident) => incident.customerId))] },
              },
              { scope: { in: [...(scope.overrideScopes ?? [])] } },
            ],
          };
  const [tiers, endpointClasses, overrides, candidates, descriptorRules, budgets] =
    await Promise.all([
      db.tier.findMany({
        orderBy: { name: "asc" },
        select: tierDocumentSelect,
      }),
      db.endpointClass.findMany({
        orderBy: { name: "asc" },
        select: endpointClassDocumentSelect,
      }),
      db.customerOverride.findMany({
        where: overrideWhere,
        orderBy: { scope: "asc" },
        select: customerOverrideDocumentSelect,
      }),
      // A customer's slice relates to no candidate (they target tiers, ceilings and addresses).
      scope.kind === "customer"
        ? []
        : db.dryRunCandidate.findMany({
            orderBy: { id: "asc" },
            select: candidateDocumentSelect,
          }),
      // Nor to any descriptor rule.
      scope.kind === "customer"
        ? []
        : db.descriptorRule.findMany({
            orderBy: { id: "asc" },
            select: descriptorRuleDocumentSelect,
          }),
      // Nor to any outbound budget.
      scope.kind === "customer"
        ? []
        : db.outboundBudget.findMany({
            orderBy: { name: "asc" },
            select: outboundBudgetDocumentSelect,
          }),
    ]);
  const last = options.last;
  const isLast = (collection: PolicyCollection, key: string) =>
    last !== undefined &&
    last !== null &&
    "id" in last &&
    last.collection === collection &&
    last.id === key;
  const orderedTiers = placeLast(tiers, (tier) => isLast("tiers", tier.name));
  const orderedClasses = placeLast(endpointClasses, (item) => isLast("endpointClasses", item.name));
  const orderedOverrides = placeLast(overrides, (item) => isLast("customerOverrides", item.scope));
  const orderedIncidents = placeLast(incidents, (item) => isLast("incidentOverrides", item.id));
  const orderedCandidates = placeLast(candidates, (item) => isLast("dryRunCandidates", item.id));
  const orderedRules = placeLast(descriptorRules.map(descriptorRuleDocument), (item) =>
    isLast("descriptorRules", item.id),
  );
  const orderedBudgets = placeLast(budgets, (item) => isLast("outboundBudgets", item.name));
  const referenced = [
    ...new Set([
      ...[...overrides, ...incidents].map((item) => item.customerId),
      ...(scope.kind === "customer" ? [scope.customerId] : []),
    ]),
  ].sort();
  const customers = await db.customer.findMany({
    where: options.customers === "all" ? {} : { id: { in: referenced } },
    orderBy: { id: "asc" },
    select: customerDocumentSelect,
  });
  const input: Record<string, unknown> = {
    schemaVersion: 1,
    defaultTier: settings.defaultTier,
    defaultEndpointClass: settings.defaultEndpointClass,
    guardrails: settings.guardrails,
    ceilings: settings.ceilings,
    tiers: orderedTiers,
    endpointClasses: orderedClasses,
    customers,
    customerOverrides: orderedOverrides.map(({ customerId, endpointClass, limit }) => ({
      customerId,
      endpointClass,
      limit,
    })),
    incidentOverrides: orderedIncidents.map((incident) => ({
      ...incident,
      startsAt: incident.startsAt.toISOString(),
      expiresAt: incident.expiresAt.toISOString(),
    })),
    dryRunCandidates: orderedCandidates.map(candidateDocumentOf),
    // Left out when there are none: the document is then what it was before rules existed.
    ...(orderedRules.length === 0 ? {} : { descriptorRules: orderedRules }),
    // Left out when none are stored: every domain then has the default mapping.
    ...(settings.descriptorMappings === null
      ? {}
      : { descriptorMappings: settings.descriptorMappings }),
    // Left out when there are none: the document is then what it was before budgets existed.
    ...(orderedBudgets.length === 0 ? {} : { outboundBudgets: orderedBudgets }),
  };
  return {
    input,
    keys: {
      tiers: orderedTiers.map((tier) => tier.name),
      endpointClasses: orderedClasses.map((endpointClass) => endpointClass.name),
      customers: customers.map((customer) => customer.id),
      customerOverrides: orderedOverrides.map((override) => override.scope),
      incidentOverrides: orderedIncidents.map((incident) => incident.id),
      dryRunCandidates: orderedCandidates.map((candidate) => candidate.id),
      descriptorRules: orderedRules.map((rule) => rule.id),
      outboundBudgets: orderedBudgets.map((budget) => budget.name),
    },
  };
}

/** The stored policy parsed; a stored policy that fails is damage, not a caller's mistake. */
export function parseStoredPolicy(stored: StoredPolicy): TPolicyDocument {
  const parsed = parsePolicyDocument(stored.input);
  if (parsed.ok) return parsed.value;
  throw new Error(`The stored policy is invalid:\n${formatFieldErrors(parsed.errors)}`);
}

const LABELS: Record<PolicyCollection, string> = {
  tiers: "tier",
  endpointClasses: "endpoint class",
  customers: "customer",
  customerOverrides: "customer override",
  incidentOverrides: "incident",
  dryRunCandidates: "candidate",
  descriptorRules: "descriptor rule",
  outboundBudgets: "outbound budget",
};

interface LocatedError {
  readonly entity: PolicyEntityRef | null;
  /** The path inside the entity. */
  readonly rest: FieldPath;
  /** `tier "free"`, `the settings`. */
  readonly label: string;
  /** The path with the position replaced by the key: `tiers.free.limit.capacity`. */
  readonly keyedPath: FieldPath;
}

function locate(stored: StoredPolicy, path: FieldPath): LocatedError {
  const [head, position, ...rest] = path;
  const collection = POLICY_COLLECTIONS.find((name) => name === head);
  if (collection !== undefined && typeof position === "number") {
    const id = stored.keys[collection][position];
    if (id !== undefined) {
      return {
        entity: { collection, id },
        rest,
        label: `${LABELS[collection]} "${id}"`,
        keyedPath: [collection, id, ...rest],
      };
    }
  }
  if (head === undefined || collection !== undefined) {
    return { entity: null, rest: path, label: "the policy", keyedPath: path };
  }
  return { entity: { collection: "settings" }, rest: path, label: "the settings", keyedPath: path };
}

const POSITION_IN_MESSAGE = new RegExp(`\\b(${POLICY_COLLECTIONS.join("|")})\\[(\\d+)\\]`, "g");

/** `endpointClasses[1]` in a message becomes `endpointClasses.search`: positions mean nothing here. */
function keyPositions(stored: StoredPolicy, message: string): string {
  return message.replace(
    POSITION_IN_MESSAGE,
    (text, collection: PolicyCollection, position: string) => {
      const key = stored.keys[collection][Number(position)];
      return key === undefined ? text : formatFieldPath([collection, key]);
    },
  );
}

function isSameEntity(a: PolicyEntityRef | null, b: PolicyEntityRef | null): boolean {
  if (a === null || b === null || a.collection !== b.collection) return false;
  return !("id" in a) || !("id" in b) || a.id === b.id;
}

/**
 * The problems a change would cause in the whole policy, as an error for the caller. Problems in
 * the entity being changed (`focus`) point at the caller's own fields (`limit.capacity`); problems
 * elsewhere name the entity they are in (`tier "free": capacity 20 is less than ...`), keyed by
 * name rather than position, since positions in the stored policy mean nothing to the caller.
 */
export function policyValidationError(
  stored: StoredPolicy,
  errors: readonly PolicyFieldError[],
  focus: PolicyEntityRef | null,
): AppError {
  const fieldErrors: FieldError[] = errors.map((error) => {
    const located = locate(stored, error.path);
    const message = keyPositions(stored, error.message);
    if (focus !== null && isSameEntity(located.entity, focus)) {
      return { path: formatFieldPath(located.rest), message };
    }
    return { path: formatFieldPath(located.keyedPath), message: `${located.label}: ${message}` };
  });
  return validationError(fieldErrors);
}

/**
 * The overrides (by scope, at most `limit`) whose size is below the cost of a request they apply
 * to, as the classes stand (with `edited`'s cost in place of the stored one, for a preview): an
 * override on class E must hold E's cost, an override on all endpoints the costliest class's. The
 * document's cost rule then reports them by name; this query only finds them, so a change to an
 * endpoint class never reads every override into memory.
 */
export async function overridesBelowCost(
  db: Db,
  edited: { readonly name: string; readonly cost: number } | null = null,
  limit = 100,
): Promise<string[]> {
  const name = edited?.name ?? "";
  const cost = edited?.cost ?? 0;
  const rows = await db.$queryRaw<{ scope: string }[]>`
    WITH classes AS (
      SELECT "name", CASE WHEN "name" = ${name} THEN ${cost}::int ELSE "cost" END AS "cost"
      FROM "EndpointClass"
    )
    SELECT o."scope"
    FROM "CustomerOverride" o
    LEFT JOIN classes c ON c."name" = o."endpointClass"
    WHERE coalesce(o."limit"->>'mode', 'enforce') <> 'off'
      AND coalesce((o."limit"->>'capacity')::float8, (o."limit"->>'burst')::float8, (o."limit"->>'limit')::float8)
        < coalesce(c."cost", (SELECT coalesce(max("cost"), 0) FROM classes))
    ORDER BY o."scope"
    LIMIT ${limit}`;
  return rows.map((row) => row.scope);
}
