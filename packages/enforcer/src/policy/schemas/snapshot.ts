/** The compiled snapshot the enforcers run. */
import { z } from "zod";
import {
  countField,
  endpointClassName,
  recordId,
  strict,
  tierName,
  ZCanonicalInstant,
  ZCustomerId,
} from "../schema-fields";
import { factorField, refineIncidentShape, ZDryRunCandidate } from "./customers";
import { checkDescriptorMappings, ZSnapshotDescriptorMapping } from "./descriptor-mappings";
import { checkDescriptorRules, ZSnapshotDescriptorRule } from "./descriptors";
import { ZExplicitPolicyLimit, ZLimitSpec } from "./limits";
import { checkOutboundBudgets, ZSnapshotOutboundBudget } from "./outbound";
import { checkPolicyCore, issueAdder } from "./rules";
import { costField, MAX_MATCH_RULES, tierLimitsRecord, ZEndpointMatch, ZKeyBy } from "./tiers";

// ---------------------------------------------------------------------------------------------
// The compiled snapshot

export const ZSnapshotTier = strict({ name: tierName("tier name"), limit: ZExplicitPolicyLimit });

export const ZSnapshotEndpointClass = strict({
  name: endpointClassName("endpoint class name"),
  match: z.array(ZEndpointMatch).max(MAX_MATCH_RULES),
  cost: costField,
  limits: tierLimitsRecord(ZExplicitPolicyLimit),
  anonymousLimit: ZExplicitPolicyLimit.nullable(),
  ceiling: ZExplicitPolicyLimit.nullable(),
  keyBy: ZKeyBy,
});

export const ZSnapshotIncidentOverride = strict({
  id: recordId("incident id"),
  customerId: ZCustomerId,
  endpointClass: endpointClassName().nullable(),
  factor: factorField.nullable(),
  limit: ZLimitSpec.nullable(),
  startsAt: ZCanonicalInstant,
  expiresAt: ZCanonicalInstant,
}).superRefine(refineIncidentShape);

export const ZSnapshotCustomerOverride = strict({
  customerId: ZCustomerId,
  endpointClass: endpointClassName().nullable(),
  limit: ZExplicitPolicyLimit,
});

/** The settings an enforcer needs: the defaults and the ceilings (guardrails are write-time). */
export const ZSnapshotSettings = strict({
  defaultTier: tierName("defaultTier"),
  defaultEndpointClass: endpointClassName("defaultEndpointClass"),
  ceilings: strict({ perCustomer: ZExplicitPolicyLimit, perAddress: ZExplicitPolicyLimit }),
  /** Absent when the policy has none, so the settings entry's text is unchanged. */
  descriptorMappings: z.array(ZSnapshotDescriptorMapping).optional(),
}).superRefine((settings, ctx) => {
  checkDescriptorMappings(settings.descriptorMappings ?? [], issueAdder(ctx));
});

/**
 * What an enforcer needs of a policy and nothing more: no customer registry (millions of
 * customers cost nothing), no display names, no incident owners or reasons, no guardrails (they
 * are write-time rules). Every default is explicit.
 */
export const ZSnapshotPolicy = strict({
  defaultTier: tierName("defaultTier"),
  defaultEndpointClass: endpointClassName("defaultEndpointClass"),
  tiers: z.array(ZSnapshotTier).min(1, { error: "a snapshot needs at least one tier" }),
  endpointClasses: z
    .array(ZSnapshotEndpointClass)
    .min(1, { error: "a snapshot needs at least one endpoint class" }),
  ceilings: strict({ perCustomer: ZExplicitPolicyLimit, perAddress: ZExplicitPolicyLimit }),
  customerOverrides: z.array(ZSnapshotCustomerOverride),
  incidentOverrides: z.array(ZSnapshotIncidentOverride),
  dryRunCandidates: z.array(ZDryRunCandidate),
  /** Absent when the policy has none, so such a snapshot's bytes and checksum are unchanged. */
  descriptorRules: z.array(ZSnapshotDescriptorRule).optional(),
  /** Absent when the policy has none (see `descriptor-mappings.ts`). */
  descriptorMappings: z.array(ZSnapshotDescriptorMapping).optional(),
  /** Absent when the policy has none, so such a snapshot's bytes and checksum are unchanged. */
  outboundBudgets: z.array(ZSnapshotOutboundBudget).optional(),
}).superRefine((policy, ctx) => {
  const add = issueAdder(ctx);
  checkPolicyCore(policy, add);
  checkDescriptorRules(policy.descriptorRules ?? [], add);
  checkDescriptorMappings(policy.descriptorMappings ?? [], add);
  checkOutboundBudgets(policy.outboundBudgets ?? [], add);
});
export type TSnapshotPolicy = z.output<typeof ZSnapshotPolicy>;

/** The snapshot format this build reads and writes. */
export const SNAPSHOT_SCHEMA_VERSION = 1;

/** A compiled, published policy. See `snapshot.ts`. */
export const ZSnapshot = strict({
  schemaVersion: z.literal(SNAPSHOT_SCHEMA_VERSION, {
    error: `schemaVersion must be ${SNAPSHOT_SCHEMA_VERSION}: this enforcer reads snapshot format ${SNAPSHOT_SCHEMA_VERSION} only`,
  }),
  /** Increases by at least 1 with every publication; enforcers never go back to a lower one. */
  version: countField("version", Number.MAX_SAFE_INTEGER),
  /** When the control plane compiled it (wall clock). */
  compiledAt: ZCanonicalInstant,
  /** Lowercase hex SHA-256 of the canonical JSON of every other field. */
  checksum: z.string({ error: "checksum is required" }).regex(/^[0-9a-f]{64}$/, {
    error: "checksum must be 64 lowercase hexadecimal characters (SHA-256)",
  }),
  policy: ZSnapshotPolicy,
});
export type TSnapshot = z.output<typeof ZSnapshot>;
