/** The policy document: its schema, the rules across its collections, and its parser. */
import { z } from "zod";
import type { LimitSpec } from "../../limiter/types";
import { fieldErrorsFromZod, type ParseResult } from "../errors";
import { checkIncidentGuardrails } from "../guardrails";
import { limitSize, limitSizeField } from "../limit-math";
import { endpointClassName, strict, tierName } from "../schema-fields";
import { parseScope } from "../scope";
import {
  ZCustomer,
  ZCustomerOverride,
  ZDryRunCandidate,
  ZGuardrails,
  ZIncidentOverride,
} from "./customers";
import {
  checkDescriptorMappings,
  MAX_DESCRIPTOR_MAPPINGS,
  ZDescriptorMapping,
} from "./descriptor-mappings";
import { checkDescriptorRules, MAX_DESCRIPTOR_RULES, ZDescriptorRule } from "./descriptors";
import type { TPolicyLimit, TPolicyMode } from "./limits";
import { checkOutboundBudgets, MAX_OUTBOUND_BUDGETS, ZOutboundBudget } from "./outbound";
import { type AddIssue, checkPolicyCore, indexUnique, issueAdder } from "./rules";
import { ZCeilings, ZEndpointClass, ZTier } from "./tiers";

// ---------------------------------------------------------------------------------------------
// The policy document

/** At most this many customer overrides (one per customer and layer), as many as customers. */
export const MAX_CUSTOMER_OVERRIDES = 1_000_000;

export const documentShape = {
  /** The format of this document. Only 1 exists. */
  schemaVersion: z.literal(1, { error: "schemaVersion must be 1" }).default(1),
  /**
   * The tier used when a gateway sends no tier or one the policy does not define. Name the most
   * restrictive tier: a customer must never get more than they pay for because of a typo.
   */
  defaultTier: tierName("defaultTier"),
  /** The endpoint class of every request no match rule claims. */
  defaultEndpointClass: endpointClassName("defaultEndpointClass"),
  guardrails: ZGuardrails.prefault({}),
  tiers: z
    .array(ZTier)
    .min(1, { error: "define at least one tier" })
    .max(100, { error: "a policy takes at most 100 tiers" }),
  endpointClasses: z
    .array(ZEndpointClass)
    .min(1, { error: "define at least one endpoint class (the default class)" })
    .max(500, { error: "a policy takes at most 500 endpoint classes" }),
  ceilings: ZCeilings,
  customers: z
    .array(ZCustomer)
    .max(1_000_000, { error: "a policy document takes at most 1,000,000 customers" })
    .default([]),
  customerOverrides: z
    .array(ZCustomerOverride)
    .max(MAX_CUSTOMER_OVERRIDES, { error: "a policy takes at most 1,000,000 customer overrides" })
    .default([]),
  incidentOverrides: z
    .array(ZIncidentOverride)
    .max(10_000, { error: "a policy takes at most 10,000 incident overrides" })
    .default([]),
  dryRunCandidates: z
    .array(ZDryRunCandidate)
    .max(100, { error: "a policy takes at most 100 dry-run candidates" })
    .default([]),
  /**
   * Limits keyed by Envoy descriptors (`descriptor-rules.ts`). Optional: a policy without any
   * leaves the field out, so its export and snapshot are what they were before rules existed.
   */
  descriptorRules: z
    .array(ZDescriptorRule)
    .max(MAX_DESCRIPTOR_RULES, {
      error: `a policy takes at most ${MAX_DESCRIPTOR_RULES} descriptor rules`,
    })
    .optional(),
  /**
   * Which descriptor entries say who an Envoy request is, per domain (`descriptor-mappings.ts`).
   * Optional: left out, every domain is mapped with the default entry keys, and the export and
   * snapshot are what they were before mappings were part of the policy.
   */
  descriptorMappings: z
    .array(ZDescriptorMapping)
    .max(MAX_DESCRIPTOR_MAPPINGS, {
      error: `a policy takes at most ${MAX_DESCRIPTOR_MAPPINGS} descriptor mappings`,
    })
    .optional(),
  /**
   * Limits on calls we make (`outbound:<name>`, `schemas/outbound.ts`), waited for by
   * `createOutboundLimiter`. Optional: a policy without any leaves the field out, so its export
   * and snapshot are what they were before budgets were part of the policy.
   */
  outboundBudgets: z
    .array(ZOutboundBudget)
    .max(MAX_OUTBOUND_BUDGETS, {
      error: `a policy takes at most ${MAX_OUTBOUND_BUDGETS} outbound budgets`,
    })
    .optional(),
};

/**
 * A whole policy: what operators edit, export and import. Beyond each field's own rules it checks
 * that every name refers to something defined, that nothing is defined twice, that no request
 * could be unadmittable because its cost exceeds a limit's size, that incident overrides for one
 * customer and layer do not overlap in time, and every incident against the guardrails.
 */
export const ZPolicyDocument = strict(documentShape).superRefine((doc, ctx) => {
  const add = issueAdder(ctx);
  checkPolicyCore(doc, add);
  checkRegistry(doc, add);
  checkIncidents(doc, add);
  checkCosts(doc, add);
  checkDescriptorRules(doc.descriptorRules ?? [], add, doc.guardrails);
  checkDescriptorMappings(doc.descriptorMappings ?? [], add);
  checkOutboundBudgets(doc.outboundBudgets ?? [], add, doc.guardrails);
});
export type TPolicyDocument = z.output<typeof ZPolicyDocument>;
/** A policy document as written, before defaults are filled in. */
export type TPolicyDocumentInput = z.input<typeof ZPolicyDocument>;

export function checkRegistry(doc: TPolicyDocument, add: AddIssue): void {
  const tiers = new Set(doc.tiers.map((tier) => tier.name));
  const customers = indexUnique(
    doc.customers,
    (customer) => customer.id,
    (index, first, id) =>
      add(["customers", index, "id"], `customer "${id}" is already listed at customers[${first}]`),
  );
  doc.customers.forEach((customer, index) => {
    if (!tiers.has(customer.tier))
      add(["customers", index, "tier"], `there is no tier "${customer.tier}"`);
  });
  const requireCustomer = (collection: string, index: number, customerId: string) => {
    if (!customers.has(customerId)) {
      add([collection, index, "customerId"], `there is no customer "${customerId}" in customers`);
    }
  };
  for (const [index, override] of doc.customerOverrides.entries()) {
    requireCustomer("customerOverrides", index, override.customerId);
  }
  for (const [index, incident] of doc.incidentOverrides.entries()) {
    requireCustomer("incidentOverrides", index, incident.customerId);
  }
}

export function checkIncidents(doc: TPolicyDocument, add: AddIssue): void {
  const index = indexReplaceable(doc);
  doc.incidentOverrides.forEach((incident, position) => {
    const replaced = replacedLimitFromIndex(index, incident.customerId, incident.endpointClass);
    for (const error of checkIncidentGuardrails(incident, {
      guardrails: doc.guardrails,
      replacedLimit: replaced,
    })) {
      add(["incidentOverrides", position, ...error.path], error.message);
    }
  });

  const byScope = new Map<string, number[]>();
  doc.incidentOverrides.forEach((incident, position) => {
    const key = `${incident.customerId} ${incident.endpointClass ?? ""}`;
    const list = byScope.get(key);
    if (list === undefined) byScope.set(key, [position]);
    else list.push(position);
  });
  for (const positions of byScope.values()) {
    const sorted = positions
      .map((position) => ({ position, incident: doc.incidentOverrides[position] }))
      .flatMap(({ position, incident }) => (incident === undefined ? [] : [{ position, incident }]))
      .sort((a, b) => Date.parse(a.incident.startsAt) - Date.parse(b.incident.startsAt));
    for (let i = 1; i < sorted.length; i++) {
      const previous = sorted[i - 1];
      const current = sorted[i];
      if (previous === undefined || current === undefined) continue;
      if (Date.parse(current.incident.startsAt) < Date.parse(previous.incident.expiresAt)) {
        add(
          ["incidentOverrides", current.position, "startsAt"],
          `overlaps incident "${previous.incident.id}" (${previous.incident.startsAt} to ${previous.incident.expiresAt}) for the same customer and scope; extend or revert that one instead`,
        );
      }
    }
  }
}

/** Every limit that could apply to a request of a class must be able to hold one request of it. */
export function checkCosts(doc: TPolicyDocument, add: AddIssue): void {
  let maxCost = 0;
  let maxCostClass = "";
  for (const endpointClass of doc.endpointClasses) {
    if (endpointClass.cost > maxCost) {
      maxCost = endpointClass.cost;
      maxCostClass = endpointClass.name;
    }
  }
  const requireSize = (
    path: (string | number)[],
    limit: { mode?: TPolicyMode } & LimitSpec,
    cost: number,
    className: string,
  ) => {
    if (limit.mode === "off" || limitSize(limit) >= cost) return;
    const field = limitSizeField(limit);
    add(
      [...path, field],
      `${field} ${limitSize(limit)} is less than the ${cost} units one request to endpoint class "${className}" costs: no such request could ever be admitted`,
    );
  };
  const classCost = new Map(doc.endpointClasses.map((c) => [c.name, c.cost]));
  const costOf = (endpointClass: string | null) =>
    endpointClass === null
      ? { cost: maxCost, className: maxCostClass }
      : { cost: classCost.get(endpointClass) ?? 0, className: endpointClass };

  for (const [index, tier] of doc.tiers.entries()) {
    requireSize(["tiers", index, "limit"], tier.limit, maxCost, maxCostClass);
  }
  requireSize(["ceilings", "perCustomer"], doc.ceilings.perCustomer, maxCost, maxCostClass);
  requireSize(["ceilings", "perAddress"], doc.ceilings.perAddress, maxCost, maxCostClass);
  doc.endpointClasses.forEach((endpointClass, index) => {
    const path = ["endpointClasses", index];
    for (const [tier, limit] of Object.entries(endpointClass.limits)) {
      requireSize([...path, "limits", tier], limit, endpointClass.cost, endpointClass.name);
    }
    if (endpointClass.anonymousLimit !== null) {
      requireSize(
        [...path, "anonymousLimit"],
        endpointClass.anonymousLimit,
        endpointClass.cost,
        endpointClass.name,
      );
    }
    if (endpointClass.ceiling !== null) {
      requireSize(
        [...path, "ceiling"],
        endpointClass.ceiling,
        endpointClass.cost,
        endpointClass.name,
      );
    }
  });
  doc.customerOverrides.forEach((override, index) => {
    const { cost, className } = costOf(override.endpointClass);
    requireSize(["customerOverrides", index, "limit"], override.limit, cost, className);
  });
  doc.incidentOverrides.forEach((incident, index) => {
    if (incident.limit === null) return;
    const { cost, className } = costOf(incident.endpointClass);
    requireSize(["incidentOverrides", index, "limit"], incident.limit, cost, className);
  });
  doc.dryRunCandidates.forEach((candidate, index) => {
    const scope = parseScope(candidate.target);
    if (scope === null || !("endpointClass" in scope)) return;
    const { cost, className } = costOf(scope.endpointClass);
    requireSize(["dryRunCandidates", index, "limit"], candidate.limit, cost, className);
  });
}

/** Lookups for {@link findReplacedLimit}, built once per document. */
export interface ReplaceableIndex {
  readonly customerTier: ReadonlyMap<string, string>;
  readonly overrides: ReadonlyMap<string, TPolicyLimit>;
  readonly tierLimits: ReadonlyMap<string, TPolicyLimit>;
  readonly classLimits: ReadonlyMap<string, Readonly<Record<string, TPolicyLimit>>>;
}

export function indexReplaceable(doc: TPolicyDocument): ReplaceableIndex {
  return {
    customerTier: new Map(doc.customers.map((customer) => [customer.id, customer.tier])),
    overrides: new Map(
      doc.customerOverrides.map((override) => [
        `${override.customerId} ${override.endpointClass ?? ""}`,
        override.limit,
      ]),
    ),
    tierLimits: new Map(doc.tiers.map((tier) => [tier.name, tier.limit])),
    classLimits: new Map(doc.endpointClasses.map((c) => [c.name, c.limits])),
  };
}

export function replacedLimitFromIndex(
  index: ReplaceableIndex,
  customerId: string,
  endpointClass: string | null,
): TPolicyLimit | null {
  const enforced = (limit: TPolicyLimit | undefined) =>
    limit !== undefined && limit.mode === "enforce" ? limit : null;
  const override = enforced(index.overrides.get(`${customerId} ${endpointClass ?? ""}`));
  if (override !== null) return override;
  const tier = index.customerTier.get(customerId);
  if (tier === undefined) return null;
  if (endpointClass === null) return enforced(index.tierLimits.get(tier));
  const limits = index.classLimits.get(endpointClass);
  return limits !== undefined && Object.hasOwn(limits, tier) ? enforced(limits[tier]) : null;
}

/**
 * The enforced limit an incident override for `customerId` on `endpointClass` (null: all
 * endpoints) would replace: the customer's enforced override for that layer, else its registry
 * tier's enforced limit for that layer, else null. This is what a factor scales and what an
 * absolute limit is compared with by the guardrails.
 */
export function findReplacedLimit(
  doc: TPolicyDocument,
  customerId: string,
  endpointClass: string | null,
): TPolicyLimit | null {
  return replacedLimitFromIndex(indexReplaceable(doc), customerId, endpointClass);
}

/**
 * Parses untrusted input (an import file, a request body) as a policy document: the document with
 * every default filled in, or every problem found, each with its path.
 */
export function parsePolicyDocument(input: unknown): ParseResult<TPolicyDocument> {
  const result = ZPolicyDocument.safeParse(input);
  if (result.success) return { ok: true, value: result.data };
  return { ok: false, errors: fieldErrorsFromZod(result.error) };
}
