/**
 * A compiled policy as a set of entries: what the control plane stores, publishes and changes one
 * entry at a time, and what every enforcer holds. Each entry has a key that names it and a value
 * that is exactly one item of the compiled snapshot (`ZSnapshotPolicy`):
 *
 * | key                      | value                                              |
 * | ------------------------ | -------------------------------------------------- |
 * | `settings`               | `{ defaultTier, defaultEndpointClass, ceilings }`, |
 * |                          | and `descriptorMappings` when the policy has any   |
 * | `tier:T`                 | a snapshot tier                                    |
 * | `endpoint-class:E`       | a snapshot endpoint class (match rules in order)   |
 * | `customer:C`             | C's override on all endpoints                      |
 * | `customer:C/endpoint:E`  | C's override on endpoint class E                   |
 * | `incident:ID`            | a snapshot incident override                       |
 * | `candidate:ID`           | a dry-run candidate                                |
 * | `descriptor-rule:ID`     | a descriptor rule (`descriptor-rules.ts`)          |
 * | `outbound:N`             | outbound budget N (`schemas/outbound.ts`)          |
 *
 * The key is derived from the value (`entryKeyOf`), so an entry cannot claim to be something
 * else.
 *
 * A key of the form `<kind>:<rest>` whose kind this build does not know is an UNRECOGNIZED entry:
 * a kind added by a later control plane. It is held as its JSON value, counted in the checksum and
 * carried through deltas and binary snapshots, but nothing reads it, so an enforcer older than the
 * kind keeps applying the policy around it instead of refusing the whole version. An entry's text is `canonicalJson(value)`; its digest is SHA-256 of `key`, a line feed and
 * the text. The set's checksum is the sum of every entry's digest modulo 2^256 (`EntrySetSum`): a
 * multiset hash, so a change of k entries updates it in O(k), in any order, and two sets with the
 * same entries have the same checksum however they were built. It detects damage (a changed,
 * missing or extra entry), which is what it is for: whoever can write to Redis decides the policy
 * anyway, so it is not meant to resist a forger.
 */
import { bytesToHex, utf8ToBytes } from "@noble/hashes/utils.js";
import { byKey, canonicalJson, sortPolicyDocument } from "./canonical";
import { fieldErrorsFromZod, type ParseResult, parseJsonInput } from "./errors";
import {
  snapshotOutboundBudget,
  type TPolicyDocument,
  type TSnapshotPolicy,
  ZDryRunCandidate,
  ZSnapshotCustomerOverride,
  ZSnapshotDescriptorRule,
  ZSnapshotEndpointClass,
  ZSnapshotIncidentOverride,
  ZSnapshotOutboundBudget,
  ZSnapshotSettings,
  ZSnapshotTier,
} from "./schemas";
import { formatScope } from "./scope";
import { sha256Bytes } from "./sha256";

export type EntryKind =
  | "settings"
  | "tier"
  | "endpoint-class"
  | "customer-override"
  | "incident"
  | "candidate"
  | "descriptor-rule"
  | "outbound-budget"
  | "unrecognized";

type SnapshotItem<Key extends keyof TSnapshotPolicy> =
  TSnapshotPolicy[Key] extends readonly (infer I)[] ? I : never;
export type TSnapshotSettings = Pick<
  TSnapshotPolicy,
  "defaultTier" | "defaultEndpointClass" | "ceilings" | "descriptorMappings"
>;
export type TSnapshotTier = SnapshotItem<"tiers">;
export type TSnapshotEndpointClass = SnapshotItem<"endpointClasses">;
export type TSnapshotCustomerOverride = SnapshotItem<"customerOverrides">;
export type TSnapshotIncident = SnapshotItem<"incidentOverrides">;
export type TSnapshotCandidate = SnapshotItem<"dryRunCandidates">;
export type TSnapshotDescriptorRuleEntry = NonNullable<TSnapshotPolicy["descriptorRules"]>[number];
export type TSnapshotOutboundBudgetEntry = NonNullable<TSnapshotPolicy["outboundBudgets"]>[number];

/** One entry, its value parsed, with what storage indexes it by. */
export type PolicyEntry =
  | { readonly kind: "settings"; readonly key: string; readonly value: TSnapshotSettings }
  | { readonly kind: "tier"; readonly key: string; readonly value: TSnapshotTier }
  | {
      readonly kind: "endpoint-class";
      readonly key: string;
      readonly value: TSnapshotEndpointClass;
    }
  | {
      readonly kind: "customer-override";
      readonly key: string;
      readonly value: TSnapshotCustomerOverride;
    }
  | { readonly kind: "incident"; readonly key: string; readonly value: TSnapshotIncident }
  | { readonly kind: "candidate"; readonly key: string; readonly value: TSnapshotCandidate }
  | {
      readonly kind: "descriptor-rule";
      readonly key: string;
      readonly value: TSnapshotDescriptorRuleEntry;
    }
  | {
      readonly kind: "outbound-budget";
      readonly key: string;
      readonly value: TSnapshotOutboundBudgetEntry;
    }
  /** A kind this build does not know (see the header): its key is its own, its value any JSON. */
  | { readonly kind: "unrecognized"; readonly key: string; readonly value: unknown };

/** An entry without its key: what `entryKeyOf` names (an unrecognized entry keeps its own). */
export type PolicyEntryContent = PolicyEntry extends infer E
  ? E extends PolicyEntry
    ? E extends { readonly kind: "unrecognized" }
      ? E
      : Omit<E, "key">
    : never
  : never;

export const SETTINGS_KEY = "settings";

/**
 * The kinds every resolution shares (a few hundred entries at most), as opposed to the
 * per-customer overrides and incidents.
 */
export const CORE_KINDS_OF_ENTRIES: readonly EntryKind[] = [
  "settings",
  "tier",
  "endpoint-class",
  "candidate",
  "descriptor-rule",
  "outbound-budget",
];

export function tierEntryKey(name: string): string {
  return `tier:${name}`;
}

export function endpointClassEntryKey(name: string): string {
  return `endpoint-class:${name}`;
}

export function overrideEntryKey(customerId: string, endpointClass: string | null): string {
  return formatScope({ kind: "customer", customerId, endpointClass });
}

export function incidentEntryKey(id: string): string {
  return formatScope({ kind: "incident", incidentId: id });
}

export function candidateEntryKey(id: string): string {
  return formatScope({ kind: "candidate", candidateId: id });
}

export function descriptorRuleEntryKey(id: string): string {
  return `descriptor-rule:${id}`;
}

/** An outbound budget's key is its scope, `outbound:<name>`. */
export function outboundBudgetEntryKey(name: string): string {
  return `outbound:${name}`;
}

/** The key an entry's value belongs under. */
export function entryKeyOf(entry: PolicyEntryContent): string {
  switch (entry.kind) {
    case "settings":
      return SETTINGS_KEY;
    case "tier":
      return tierEntryKey(entry.value.name);
    case "endpoint-class":
      return endpointClassEntryKey(entry.value.name);
    case "customer-override":
      return overrideEntryKey(entry.value.customerId, entry.value.endpointClass);
    case "incident":
      return incidentEntryKey(entry.value.id);
    case "candidate":
      return candidateEntryKey(entry.value.id);
    case "descriptor-rule":
      return descriptorRuleEntryKey(entry.value.id);
    case "outbound-budget":
      return outboundBudgetEntryKey(entry.value.name);
    case "unrecognized":
      return entry.key;
    default: {
      const unknown: never = entry;
      throw new TypeError(`unknown entry kind ${JSON.stringify(unknown)}`);
    }
  }
}

/** `<kind>:<rest>`: the shape of every key but `settings`, known kind or not. */
const KIND_PREFIX = /^[a-z][a-z0-9-]{0,63}:./;

/**
 * The kind of entry a key names: `unrecognized` for a `<kind>:<rest>` key of a kind this build
 * does not know, null when it has no kind at all.
 */
export function entryKindOfKey(key: string): EntryKind | null {
  if (key === SETTINGS_KEY) return "settings";
  if (key.startsWith("tier:")) return "tier";
  if (key.startsWith("endpoint-class:")) return "endpoint-class";
  if (key.startsWith("customer:")) return "customer-override";
  if (key.startsWith("incident:")) return "incident";
  if (key.startsWith("candidate:")) return "candidate";
  if (key.startsWith("descriptor-rule:")) return "descriptor-rule";
  if (key.startsWith("outbound:")) return "outbound-budget";
  return KIND_PREFIX.test(key) ? "unrecognized" : null;
}

/** The customer an entry concerns (overrides and incidents), for indexing; null otherwise. */
export function entryCustomerId(entry: PolicyEntry): string | null {
  return entry.kind === "customer-override" || entry.kind === "incident"
    ? entry.value.customerId
    : null;
}

/** When an incident entry stops applying (epoch ms); null for every other kind. */
export function entryExpiresAtMs(entry: PolicyEntry): number | null {
  return entry.kind === "incident" ? Date.parse(entry.value.expiresAt) : null;
}

/** The text an entry is stored, published and hashed as. */
export function entryText(entry: PolicyEntry): string {
  return canonicalJson(entry.value);
}

const SCHEMAS = {
  settings: ZSnapshotSettings,
  tier: ZSnapshotTier,
  "endpoint-class": ZSnapshotEndpointClass,
  "customer-override": ZSnapshotCustomerOverride,
  incident: ZSnapshotIncidentOverride,
  candidate: ZDryRunCandidate,
  "descriptor-rule": ZSnapshotDescriptorRule,
  "outbound-budget": ZSnapshotOutboundBudget,
} as const;

/**
 * Validates an entry received from storage or Redis: the key names a kind, the value has that
 * kind's shape (every default explicit, as compiled), and the value belongs under the key.
 * Errors are located under `key`.
 */
export function parseEntry(key: string, value: unknown): ParseResult<PolicyEntry> {
  const kind = entryKindOfKey(key);
  if (kind === null) {
    return { ok: false, errors: [{ path: [key], message: `"${key}" names no kind of entry` }] };
  }
  if (kind === "unrecognized") {
    if (value === undefined) {
      return { ok: false, errors: [{ path: [key], message: "the entry has no value" }] };
    }
    return { ok: true, value: { kind, key, value } };
  }
  const result = SCHEMAS[kind].safeParse(value);
  if (!result.success) {
    return {
      ok: false,
      errors: fieldErrorsFromZod(result.error).map((error) => ({
        path: [key, ...error.path],
        message: error.message,
      })),
    };
  }
  const entry = { kind, key, value: result.data } as PolicyEntry;
  const expected = entryKeyOf(entry);
  if (expected !== key) {
    return {
      ok: false,
      errors: [{ path: [key], message: `the value belongs under "${expected}", not "${key}"` }],
    };
  }
  return { ok: true, value: entry };
}

/** Parses an entry's JSON text (`parseEntry` after `JSON.parse`). */
export function parseEntryText(key: string, text: string): ParseResult<PolicyEntry> {
  const json = parseJsonInput(text, `entry "${key}"`);
  return json.ok ? parseEntry(key, json.value) : json;
}

function entry<Kind extends EntryKind>(
  kind: Kind,
  value: Extract<PolicyEntry, { kind: Kind }>["value"],
): PolicyEntry {
  const partial = { kind, value } as PolicyEntryContent;
  return { ...partial, key: entryKeyOf(partial) } as PolicyEntry;
}

/**
 * The entries of a parsed policy document, compiled as `compileSnapshot` compiles it: no registry,
 * no display names, no incident owners or reasons, every default explicit, match rules in
 * canonical order. Incidents that have expired at `compiledAtMs` are left out (they can never
 * apply again). In canonical snapshot order.
 */
export function compileEntries(doc: TPolicyDocument, compiledAtMs: number): PolicyEntry[] {
  const sorted = sortPolicyDocument(doc);
  return [
    entry("settings", {
      defaultTier: sorted.defaultTier,
      defaultEndpointClass: sorted.defaultEndpointClass,
      ceilings: {
        perCustomer: sorted.ceilings.perCustomer,
        perAddress: sorted.ceilings.perAddress,
      },
      // Left out when there are none, so such a policy's settings entry is what it always was.
      ...(sorted.descriptorMappings === undefined
        ? {}
        : {
            descriptorMappings: sorted.descriptorMappings.map((mapping) => ({
              domain: mapping.domain,
              customer: mapping.customer,
              tier: mapping.tier,
              method: mapping.method,
              path: mapping.path,
              endpointClass: mapping.endpointClass,
              clientAddress: mapping.clientAddress,
              limitOverride: mapping.limitOverride,
            })),
          }),
    }),
    ...sorted.tiers.map((tier) => entry("tier", { name: tier.name, limit: tier.limit })),
    ...sorted.endpointClasses.map((endpointClass) =>
      entry("endpoint-class", {
        name: endpointClass.name,
        match: endpointClass.match.map((rule) => ({ method: rule.method, path: rule.path })),
        cost: endpointClass.cost,
        limits: endpointClass.limits,
        anonymousLimit: endpointClass.anonymousLimit,
        ceiling: endpointClass.ceiling,
        keyBy: endpointClass.keyBy,
      }),
    ),
    ...sorted.customerOverrides.map((override) =>
      entry("customer-override", {
        customerId: override.customerId,
        endpointClass: override.endpointClass,
        limit: override.limit,
      }),
    ),
    ...sorted.incidentOverrides
      .filter((incident) => Date.parse(incident.expiresAt) > compiledAtMs)
      .map((incident) =>
        entry("incident", {
          id: incident.id,
          customerId: incident.customerId,
          endpointClass: incident.endpointClass,
          factor: incident.factor,
          limit: incident.limit,
          startsAt: incident.startsAt,
          expiresAt: incident.expiresAt,
        }),
      ),
    ...sorted.dryRunCandidates.map((candidate) =>
      entry("candidate", {
        id: candidate.id,
        target: candidate.target,
        limit: candidate.limit,
        ...(candidate.sliceBasisPoints === undefined
          ? {}
          : { sliceBasisPoints: candidate.sliceBasisPoints }),
      }),
    ),
    ...(sorted.descriptorRules ?? []).map((rule) =>
      entry("descriptor-rule", {
        id: rule.id,
        domain: rule.domain,
        descriptor: rule.descriptor.map((level) => ({ key: level.key, value: level.value })),
        limit: rule.limit,
        mode: rule.mode,
        onStoreFailure: rule.onStoreFailure,
        // Stated only when replicated, so a rule without it compiles to the bytes it always did.
        ...(rule.durability === "replicated" ? { durability: "replicated" as const } : {}),
        name: rule.name,
        replaces: rule.replaces,
        wildcardCounter: rule.wildcardCounter,
        detailedMetric: rule.detailedMetric,
        // Left out when empty, so a rule without raises compiles to the bytes it always did.
        ...(rule.raises.length === 0
          ? {}
          : {
              raises: [...rule.raises].sort(byKey((raise) => raise.id)).map((raise) => ({
                id: raise.id,
                descriptor: raise.descriptor.map((level) => ({
                  key: level.key,
                  value: level.value,
                })),
                factor: raise.factor,
                limit: raise.limit,
                startsAt: raise.startsAt,
                expiresAt: raise.expiresAt,
              })),
            }),
      }),
    ),
    ...(sorted.outboundBudgets ?? []).map((budget) =>
      entry("outbound-budget", snapshotOutboundBudget(budget)),
    ),
  ];
}

/** The entries of a compiled snapshot policy (one per item). */
export function entriesOfSnapshotPolicy(policy: TSnapshotPolicy): PolicyEntry[] {
  return [
    entry("settings", {
      defaultTier: policy.defaultTier,
      defaultEndpointClass: policy.defaultEndpointClass,
      ceilings: policy.ceilings,
      ...(policy.descriptorMappings === undefined
        ? {}
        : { descriptorMappings: policy.descriptorMappings }),
    }),
    ...policy.tiers.map((value) => entry("tier", value)),
    ...policy.endpointClasses.map((value) => entry("endpoint-class", value)),
    ...policy.customerOverrides.map((value) => entry("customer-override", value)),
    ...policy.incidentOverrides.map((value) => entry("incident", value)),
    ...policy.dryRunCandidates.map((value) => entry("candidate", value)),
    ...(policy.descriptorRules ?? []).map((value) => entry("descriptor-rule", value)),
    ...(policy.outboundBudgets ?? []).map((value) => entry("outbound-budget", value)),
  ];
}

/**
 * The snapshot policy a set of entries makes, collections in canonical order (what
 * `compileSnapshot` writes); unrecognized entries have no place in it and are left out. Throws when there is no settings entry: a set without one is not a
 * policy, and callers build sets from validated storage.
 */
export function snapshotPolicyOfEntries(entries: Iterable<PolicyEntry>): TSnapshotPolicy {
  let settings: TSnapshotSettings | null = null;
  const tiers: TSnapshotTier[] = [];
  const endpointClasses: TSnapshotEndpointClass[] = [];
  const customerOverrides: TSnapshotCustomerOverride[] = [];
  const incidentOverrides: TSnapshotIncident[] = [];
  const dryRunCandidates: TSnapshotCandidate[] = [];
  const descriptorRules: TSnapshotDescriptorRuleEntry[] = [];
  const outboundBudgets: TSnapshotOutboundBudgetEntry[] = [];
  for (const item of entries) {
    switch (item.kind) {
      case "settings":
        settings = item.value;
        break;
      case "tier":
        tiers.push(item.value);
        break;
      case "endpoint-class":
        endpointClasses.push(item.value);
        break;
      case "customer-override":
        customerOverrides.push(item.value);
        break;
      case "incident":
        incidentOverrides.push(item.value);
        break;
      case "candidate":
        dryRunCandidates.push(item.value);
        break;
      case "descriptor-rule":
        descriptorRules.push(item.value);
        break;
      case "outbound-budget":
        outboundBudgets.push(item.value);
        break;
      case "unrecognized":
        break;
      default: {
        const unknown: never = item;
        throw new TypeError(`unknown entry ${JSON.stringify(unknown)}`);
      }
    }
  }
  if (settings === null) throw new TypeError("the entries hold no settings entry");
  return {
    defaultTier: settings.defaultTier,
    defaultEndpointClass: settings.defaultEndpointClass,
    tiers: tiers.sort(byKey((tier) => tier.name)),
    endpointClasses: endpointClasses.sort(byKey((endpointClass) => endpointClass.name)),
    ceilings: settings.ceilings,
    customerOverrides: customerOverrides.sort(
      byKey(
        (override) => override.customerId,
        (override) => override.endpointClass ?? "",
      ),
    ),
    incidentOverrides: incidentOverrides.sort(
      byKey(
        (incident) => incident.customerId,
        (incident) => incident.endpointClass ?? "",
        (incident) => incident.startsAt,
        (incident) => incident.id,
      ),
    ),
    dryRunCandidates: dryRunCandidates.sort(byKey((candidate) => candidate.id)),
    // Left out when empty, so a policy without rules compiles to the bytes it always did.
    ...(descriptorRules.length === 0
      ? {}
      : { descriptorRules: descriptorRules.sort(byKey((rule) => rule.id)) }),
    ...(settings.descriptorMappings === undefined
      ? {}
      : { descriptorMappings: settings.descriptorMappings }),
    ...(outboundBudgets.length === 0
      ? {}
      : { outboundBudgets: outboundBudgets.sort(byKey((budget) => budget.name)) }),
  };
}

// ---------------------------------------------------------------------------------------------
// The set checksum

const MODULUS = 1n << 256n;

/** Lowercase hex SHA-256 of a text's UTF-8 bytes. */
export type Sha256Hex = (text: string) => string;

/** SHA-256 from `@noble/hashes`: runs anywhere (a faster native one may be passed instead). */
export const portableSha256Hex: Sha256Hex = (text) => bytesToHex(sha256Bytes(utf8ToBytes(text)));

/**
 * SHA-256 of `key`, a line feed and `text`, as lowercase hex: an entry's digest. `sha256Hex` is
 * any SHA-256 (Node's `crypto` is several times faster than the portable one for a million
 * entries; the digest is the same).
 */
export function entryDigestHex(
  key: string,
  text: string,
  sha256Hex: Sha256Hex = portableSha256Hex,
): string {
  return sha256Hex(`${key}\n${text}`);
}

function digestValue(hex: string): bigint {
  if (!/^[0-9a-f]{64}$/.test(hex)) throw new TypeError(`not a SHA-256 digest: ${hex}`);
  return BigInt(`0x${hex}`);
}

/** The checksum of the empty set. */
export const EMPTY_SET_CHECKSUM = "0".repeat(64);

/**
 * A multiset hash of entries: the sum of their digests modulo 2^256. `add` and `remove` are
 * O(1), so a delta of k entries updates it in O(k).
 */
export class EntrySetSum {
  #sum: bigint;

  constructor(checksumHex: string = EMPTY_SET_CHECKSUM) {
    this.#sum = digestValue(checksumHex);
  }

  add(digestHex: string): this {
    this.#sum = (this.#sum + digestValue(digestHex)) % MODULUS;
    return this;
  }

  remove(digestHex: string): this {
    this.#sum = (this.#sum - digestValue(digestHex) + MODULUS) % MODULUS;
    return this;
  }

  get hex(): string {
    return this.#sum.toString(16).padStart(64, "0");
  }
}

/** The checksum of a whole set of entries. */
export function entrySetChecksum(entries: Iterable<PolicyEntry>): string {
  const sum = new EntrySetSum();
  for (const item of entries) sum.add(entryDigestHex(item.key, entryText(item)));
  return sum.hex;
}
