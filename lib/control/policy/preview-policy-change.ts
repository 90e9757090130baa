/**
 * What an edit of a tier, an endpoint class or the settings would change, before it is saved: the
 * limits it adds, changes or removes (old and new), its other field changes, and for each limit
 * who it reaches: how many customers are on the tier, and which of them keep their own limit
 * because a customer override (or an incident with an absolute limit) outranks the rule. It writes
 * nothing and publishes nothing; the diff is `diffPolicyRules` in @limitplane/enforcer/policy.
 *
 * The edit is validated as the update services validate it: its own fields with the same schemas,
 * then the whole policy it would make (a limit too small for the costliest class it applies to, a
 * match rule another class already has), with each problem at the caller's field. So a preview
 * that succeeds is an edit the service accepts, unless someone changes the policy meanwhile.
 */

import {
  diffPolicyRules,
  type FieldChange,
  fieldErrorsFromZod,
  type LimitChange,
  type OverrideHolder,
  outranksChange,
  type PolicyRules,
  parsePolicyDocument,
  type TLimitSpec,
  ZLimitSpec,
} from "@limitplane/enforcer/policy";
import { z } from "zod";
import type { ClockedReadDeps, ReadDeps } from "../deps";
import {
  type EndpointClassRecord,
  endpointClassSelect,
  toEndpointClassRecord,
} from "../endpoint-class/endpoint-class-record";
import { ZUpdateEndpointClassOptions } from "../endpoint-class/update-endpoint-class";
import { notFound, toFieldErrors, validationError } from "../errors";
import { findSettings } from "../settings/settings-record";
import { ZUpdatePolicySettingsOptions } from "../settings/update-policy-settings";
import { tierSelect, toTierRecord } from "../tier/tier-record";
import { ZUpdateTierOptions } from "../tier/update-tier";
import { noPolicyYet } from "./run-policy-change";
import {
  currentIncidentWhere,
  overridesBelowCost,
  type PolicyEntityRef,
  policyValidationError,
  readStoredPolicy,
} from "./stored-policy";

/** How many customers a preview names per limit; the rest are counted. */
export const PREVIEW_SAMPLE_SIZE = 5;

const tierShape = ZUpdateTierOptions.shape;
const classShape = ZUpdateEndpointClassOptions.shape;
const settingsShape = ZUpdatePolicySettingsOptions.shape;

/** The edit to preview: the fields an update service takes, without `expectedVersion`. */
export const ZPreviewPolicyChangeOptions = z.discriminatedUnion(
  "kind",
  [
    z.strictObject({
      kind: z.literal("tier"),
      name: tierShape.name,
      limit: tierShape.limit.unwrap(),
    }),
    z.strictObject({
      kind: z.literal("endpoint-class"),
      name: classShape.name,
      match: classShape.match,
      cost: classShape.cost,
      limits: classShape.limits,
      anonymousLimit: classShape.anonymousLimit,
      ceiling: classShape.ceiling,
      keyBy: classShape.keyBy,
    }),
    z.strictObject({
      kind: z.literal("settings"),
      defaultTier: settingsShape.defaultTier,
      defaultEndpointClass: settingsShape.defaultEndpointClass,
      ceilings: settingsShape.ceilings,
    }),
  ],
  { error: "kind must be one of: tier, endpoint-class, settings" },
);
export type PreviewPolicyChangeOptions = z.input<typeof ZPreviewPolicyChangeOptions>;

/** A customer whose own limit outranks a changed rule. */
export interface OutrankingCustomer {
  readonly customerId: string;
  readonly displayName: string | null;
  /** `override`: a standing customer override; `incident`: a current or scheduled incident. */
  readonly source: "override" | "incident";
  /** The limit the customer keeps. */
  readonly limit: TLimitSpec | null;
}

/** Who one changed limit reaches. */
export interface LimitChangeReach {
  /**
   * Customers the limit applies to: those on the tier for a tier limit, every customer in the
   * registry for a ceiling; null for anonymous limits (they apply to addresses, not customers).
   */
  readonly customersInScope: number | null;
  /** Customers in scope whose own override or absolute incident limit still wins. */
  readonly outrankedCount: number;
  /** Up to {@link PREVIEW_SAMPLE_SIZE} of them, by customer id. */
  readonly outranked: readonly OutrankingCustomer[];
  /**
   * Customers in scope with a current or scheduled incident that multiplies this rule (a factor):
   * the edit reaches them too, scaled. By customer id.
   */
  readonly scaledByIncident: readonly string[];
  /** Dry-run candidates that target this rule: promoting one would replace the edit. */
  readonly candidates: readonly string[];
}

export interface PreviewedLimitChange extends LimitChange {
  readonly affected: LimitChangeReach;
}

export interface PolicyChangePreview {
  /** What the preview is of: `tier "free"`, `endpoint class "reports"`, `settings`. */
  readonly subject: string;
  /** The entity's version the preview was computed against; send it as expectedVersion. */
  readonly version: number;
  readonly limits: readonly PreviewedLimitChange[];
  readonly fields: readonly FieldChange[];
  /** True when the edit changes nothing enforcers see. */
  readonly isNoChange: boolean;
}

interface HolderRow extends OverrideHolder {
  readonly displayName: string | null;
  readonly limit: TLimitSpec | null;
}

/** The stored tiers, endpoint classes and settings, and the rules they make: what a preview edits. */
export async function readPolicyRules(db: ReadDeps["db"]) {
  const [tierRows, classRows, settings] = await Promise.all([
    db.tier.findMany({ orderBy: { name: "asc" }, select: tierSelect }),
    db.endpointClass.findMany({ orderBy: { name: "asc" }, select: endpointClassSelect }),
    findSettings(db),
  ]);
  const tiers = tierRows.map(toTierRecord);
  const classes = classRows.map(toEndpointClassRecord);
  const rules: PolicyRules = {
    defaultTier: settings.defaultTier,
    defaultEndpointClass: settings.defaultEndpointClass,
    tiers,
    endpointClasses: classes,
    ceilings: settings.ceilings,
  };
  return { tiers, classes, settings, rules };
}

/**
 * The preview of an edit. Throws VALIDATION_FAILED with field-named errors for an invalid edit,
 * NOT_FOUND for an unknown tier or class.
 */
export async function previewPolicyChange(
  options: PreviewPolicyChangeOptions,
  deps: ClockedReadDeps,
): Promise<PolicyChangePreview> {
  const parsed = ZPreviewPolicyChangeOptions.safeParse(options);
  if (!parsed.success) throw validationError(toFieldErrors(fieldErrorsFromZod(parsed.error)));
  const input = parsed.data;
  const nowMs = deps.clock.nowMs();
  const db = deps.db;

  const { tiers, classes, settings, rules: before } = await readPolicyRules(db);

  let after: PolicyRules;
  let subject: string;
  let version: number;
  switch (input.kind) {
    case "tier": {
      const tier = tiers.find((candidate) => candidate.name === input.name);
      if (tier === undefined) throw notFound("Tier", input.name);
      subject = `tier "${tier.name}"`;
      version = tier.version;
      after = {
        ...before,
        tiers: tiers.map((t) => (t.name === tier.name ? { ...t, limit: input.limit } : t)),
      };
      break;
    }
    case "endpoint-class": {
      const endpointClass = classes.find((candidate) => candidate.name === input.name);
      if (endpointClass === undefined) throw notFound("Endpoint class", input.name);
      subject = `endpoint class "${endpointClass.name}"`;
      version = endpointClass.version;
      const edited: EndpointClassRecord = {
        ...endpointClass,
        ...(input.match === undefined ? {} : { match: input.match }),
        ...(input.cost === undefined ? {} : { cost: input.cost }),
        ...(input.limits === undefined ? {} : { limits: input.limits }),
        ...(input.anonymousLimit === undefined ? {} : { anonymousLimit: input.anonymousLimit }),
        ...(input.ceiling === undefined ? {} : { ceiling: input.ceiling }),
        ...(input.keyBy === undefined ? {} : { keyBy: input.keyBy }),
      };
      after = {
        ...before,
        endpointClasses: classes.map((c) => (c.name === edited.name ? edited : c)),
      };
      break;
    }
    case "settings": {
      subject = "settings";
      version = settings.version;
      after = {
        ...before,
        defaultTier: input.defaultTier ?? before.defaultTier,
        defaultEndpointClass: input.defaultEndpointClass ?? before.defaultEndpointClass,
        ceilings: {
          perCustomer: input.ceilings?.perCustomer ?? before.ceilings.perCustomer,
          perAddress: input.ceilings?.perAddress ?? before.ceilings.perAddress,
        },
      };
      break;
    }
    default: {
      const unknownKind: never = input;
      throw new Error(`unknown preview kind ${JSON.stringify(unknownKind)}`);
    }
  }

  await checkWholePolicy(db, input, nowMs);
  const diff = diffPolicyRules(before, after);
  const tierChanges = diff.limits.filter((change) => change.reach === "tier");
  const incidentHolders = tierChanges.length === 0 ? [] : await loadIncidentHolders(db, nowMs);
  const candidates = await db.dryRunCandidate.findMany({
    where: { target: { in: diff.limits.map((change) => change.scope) } },
    orderBy: { id: "asc" },
    select: { id: true, target: true },
  });
  const everyone = diff.limits.some((change) => change.reach === "ceiling")
    ? await db.customer.count()
    : 0;
  const onTier = new Map<string, number>();
  for (const tier of new Set(tierChanges.map((change) => change.tier ?? ""))) {
    onTier.set(tier, await db.customer.count({ where: { tier } }));
  }

  const limits: PreviewedLimitChange[] = [];
  for (const change of diff.limits) {
    const incidents = incidentHolders.filter((holder) => outranksChange(holder, change));
    const overrides =
      change.reach === "tier"
        ? await overrideReach(
            db,
            change,
            incidents.map((holder) => holder.customerId),
          )
        : { count: 0, sample: [], customerIds: new Set<string>() };
    // One customer may hold an override and an incident on the same layer: counted once, shown
    // with the incident (it is what applies while it lasts).
    const incidentOnly = incidents.filter(
      (holder) => !overrides.customerIds.has(holder.customerId),
    );
    const byCustomer = new Map<string, HolderRow>();
    for (const holder of overrides.sample) byCustomer.set(holder.customerId, holder);
    for (const holder of incidents) byCustomer.set(holder.customerId, holder);
    const outranked = [...byCustomer.values()]
      .sort((a, b) => (a.customerId < b.customerId ? -1 : a.customerId > b.customerId ? 1 : 0))
      .slice(0, PREVIEW_SAMPLE_SIZE);
    const outrankingIds = new Set(incidents.map((holder) => holder.customerId));
    const affected: LimitChangeReach = {
      customersInScope:
        change.reach === "anonymous"
          ? null
          : change.reach === "ceiling"
            ? everyone
            : (onTier.get(change.tier ?? "") ?? 0),
      outrankedCount: overrides.count + new Set(incidentOnly.map((h) => h.customerId)).size,
      outranked: outranked.map((holder) => ({
        customerId: holder.customerId,
        displayName: holder.displayName,
        source: holder.source,
        limit: holder.limit,
      })),
      scaledByIncident: [
        ...new Set(
          incidentHolders
            .filter(
              (holder) =>
                change.reach === "tier" &&
                holder.source === "incident" &&
                !holder.isAbsolute &&
                holder.tier === change.tier &&
                holder.endpointClass === change.endpointClass &&
                !outrankingIds.has(holder.customerId) &&
                !overrides.customerIds.has(holder.customerId),
            )
            .map((holder) => holder.customerId),
        ),
      ].sort(),
      candidates: candidates
        .filter((candidate) => candidate.target === change.scope)
        .map((candidate) => candidate.id),
    };
    limits.push({ ...change, affected });
  }

  return {
    subject,
    version,
    limits,
    fields: diff.fields,
    isNoChange: diff.limits.length === 0 && diff.fields.length === 0,
  };
}

/** A stored override or incident limit as a bare limit spec (mode and failure policy dropped). */
function limitSpecOf(value: unknown): TLimitSpec | null {
  if (value === null || value === undefined) return null;
  const spec = ZLimitSpec.safeParse(stripPolicyFields(value));
  return spec.success ? spec.data : null;
}

function stripPolicyFields(value: unknown): unknown {
  if (typeof value !== "object" || value === null) return value;
  const {
    mode: _mode,
    onStoreFailure: _onStoreFailure,
    ...spec
  } = value as Record<string, unknown>;
  return spec;
}

/**
 * The standing overrides on a changed tier limit's layer, held by customers on that tier: how
 * many, the first few by customer id, and which of `amongCustomerIds` (incident holders) also
 * hold one. Counted and sampled in Postgres: a tier with a million overrides costs two indexed
 * queries, never its rows.
 */
async function overrideReach(
  db: ReadDeps["db"],
  change: LimitChange,
  amongCustomerIds: readonly string[],
): Promise<{ count: number; sample: HolderRow[]; customerIds: Set<string> }> {
  const where = {
    endpointClass: change.endpointClass,
    customer: { tier: change.tier ?? "" },
  };
  const [count, rows, among] = await Promise.all([
    db.customerOverride.count({ where }),
    db.customerOverride.findMany({
      where,
      orderBy: { customerId: "asc" },
      take: PREVIEW_SAMPLE_SIZE,
      select: {
        customerId: true,
        endpointClass: true,
        limit: true,
        customer: { select: { tier: true, displayName: true } },
      },
    }),
    amongCustomerIds.length === 0
      ? []
      : db.customerOverride.findMany({
          where: { ...where, customerId: { in: [...amongCustomerIds] } },
          select: { customerId: true },
        }),
  ]);
  return {
    count,
    sample: rows.map(
      (override): HolderRow => ({
        customerId: override.customerId,
        tier: override.customer.tier,
        endpointClass: override.endpointClass,
        source: "override",
        isAbsolute: true,
        displayName: override.customer.displayName,
        limit: limitSpecOf(override.limit),
      }),
    ),
    customerIds: new Set(among.map((row) => row.customerId)),
  };
}

/** Current incidents (at most 10,000) with their customers' registry tiers. */
async function loadIncidentHolders(db: ReadDeps["db"], nowMs: number): Promise<HolderRow[]> {
  const incidents = await db.incidentOverride.findMany({
    where: currentIncidentWhere(nowMs),
    select: { customerId: true, endpointClass: true, limit: true },
  });
  const customers = await db.customer.findMany({
    where: { id: { in: [...new Set(incidents.map((incident) => incident.customerId))] } },
    select: { id: true, tier: true, displayName: true },
  });
  const customerById = new Map(customers.map((customer) => [customer.id, customer]));
  return incidents.flatMap((incident): HolderRow[] => {
    const customer = customerById.get(incident.customerId);
    if (customer === undefined) return [];
    return [
      {
        customerId: incident.customerId,
        tier: customer.tier,
        endpointClass: incident.endpointClass,
        source: "incident",
        isAbsolute: incident.limit !== null,
        displayName: customer.displayName,
        limit: limitSpecOf(incident.limit),
      },
    ];
  });
}

type ParsedPreview = z.output<typeof ZPreviewPolicyChangeOptions>;

/**
 * Applies the edit to the stored policy and validates the whole document, as `runPolicyChange`
 * does when saving; problems in the edited entity come back at the caller's own fields.
 */
async function checkWholePolicy(db: ReadDeps["db"], input: ParsedPreview, nowMs: number) {
  const focus: PolicyEntityRef =
    input.kind === "tier"
      ? { collection: "tiers", id: input.name }
      : input.kind === "endpoint-class"
        ? { collection: "endpointClasses", id: input.name }
        : { collection: "settings" };
  // The core with every current incident, plus any override the edit's costs would break (the
  // same slice the update service validates): never every override.
  const stored = await readStoredPolicy(db, {
    nowMs,
    customers: "referenced",
    last: focus,
    scope: {
      kind: "core",
      overrideScopes:
        input.kind === "endpoint-class"
          ? await overridesBelowCost(
              db,
              input.cost === undefined ? null : { name: input.name, cost: input.cost },
            )
          : [],
    },
  });
  if (stored === null) throw noPolicyYet();
  const edited: Record<string, unknown> = { ...stored.input };
  const entries = (key: string): Record<string, unknown>[] => {
    const value = stored.input[key];
    return Array.isArray(value) ? (value as Record<string, unknown>[]) : [];
  };
  if (input.kind === "tier") {
    edited.tiers = entries("tiers").map((tier) =>
      tier.name === input.name ? { ...tier, limit: input.limit } : tier,
    );
  } else if (input.kind === "endpoint-class") {
    const { kind: _kind, name, ...fields } = input;
    const changed = Object.fromEntries(
      Object.entries(fields).filter(([, value]) => value !== undefined),
    );
    edited.endpointClasses = entries("endpointClasses").map((endpointClass) =>
      endpointClass.name === name ? { ...endpointClass, ...changed } : endpointClass,
    );
  } else {
    const ceilings = (stored.input.ceilings ?? {}) as Record<string, unknown>;
    edited.ceilings = {
      perCustomer: input.ceilings?.perCustomer ?? ceilings.perCustomer,
      perAddress: input.ceilings?.perAddress ?? ceilings.perAddress,
    };
    if (input.defaultTier !== undefined) edited.defaultTier = input.defaultTier;
    if (input.defaultEndpointClass !== undefined)
      edited.defaultEndpointClass = input.defaultEndpointClass;
  }
  const parsed = parsePolicyDocument(edited);
  if (!parsed.ok) throw policyValidationError({ ...stored, input: edited }, parsed.errors, focus);
}
