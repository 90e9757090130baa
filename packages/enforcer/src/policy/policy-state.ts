/**
 * The policy an enforcer holds: a set of entries (`entries.ts`) at a version, with its checksum,
 * changed in place by deltas (`policy-delta.ts`) and indexed for resolution.
 *
 * - **Deltas apply in order and all or nothing.** `applyDelta` first verifies everything without
 *   touching the state: the delta's base is this version and its base checksum this checksum, every
 *   value has its key's shape, references hold, and the checksum the delta promises is the one its
 *   changes produce from this set (each removed or replaced entry's digest taken out, each new
 *   one's put in). Only then does it change anything, so a refused delta leaves the last good
 *   policy exactly as it was.
 * - **Memory.** A state loaded from a binary snapshot (`fromBinary`, `binary-snapshot.ts`) keeps
 *   its overrides as the snapshot's bytes (about 30 bytes per override) and looks a customer up
 *   by binary search; the customers a delta changes since are held in a map over them. In a state
 *   built entry by entry, a customer override costs one map slot keyed by the customer id and a
 *   small array of (endpoint class, limit) pairs. Either way equal limits are one shared object. Nothing per override is
 *   prepared ahead: a customer's rules (scope strings, buckets) are built when one of its requests
 *   is resolved and kept in a two-generation cache of at most `2 x customerCacheSize` customers, so
 *   the memory for the overrides in use is bounded too. Tiers, endpoint classes, ceilings and
 *   candidates are few (at most a few hundred) and are indexed eagerly.
 */

import { GenerationalMap } from "../collections/generational-map";
import {
  type BinaryOverrides,
  decodeBinarySnapshot,
  encodeBinarySnapshot,
  type OverrideList,
  type Sha256Bytes,
} from "./binary-snapshot";
import { canonicalJson } from "./canonical";
import { DescriptorRuleIndex } from "./descriptor-rules";
import {
  candidateEntryKey,
  descriptorRuleEntryKey,
  EntrySetSum,
  endpointClassEntryKey,
  entriesOfSnapshotPolicy,
  entryDigestHex,
  entryKindOfKey,
  entryText,
  outboundBudgetEntryKey,
  overrideEntryKey,
  type PolicyEntry,
  parseEntry,
  portableSha256Hex,
  SETTINGS_KEY,
  type Sha256Hex,
  type TSnapshotCandidate,
  type TSnapshotCustomerOverride,
  type TSnapshotDescriptorRuleEntry,
  type TSnapshotEndpointClass,
  type TSnapshotIncident,
  type TSnapshotOutboundBudgetEntry,
  type TSnapshotSettings,
  type TSnapshotTier,
  tierEntryKey,
} from "./entries";
import type { ParseResult, PolicyFieldError } from "./errors";
import type { TPolicyDelta } from "./policy-delta";
import {
  type CustomerRules,
  type PreparedCore,
  PreparedSnapshot,
  prepareCore,
  prepareCustomerRules,
} from "./prepare";
import { checkSnapshotPolicyCore, type TPolicyLimit, type TSnapshot } from "./schemas";
import { parseScope } from "./scope";

/** Options of a {@link PolicyState}. */
export interface PolicyStateOptions {
  /**
   * Customers whose prepared rules are kept per cache generation; at most twice this many are
   * held. A customer outside the cache costs one rebuild (a few microseconds) on its next request.
   * @default 10_000
   */
  readonly customerCacheSize?: number;
  /**
   * The SHA-256 the state hashes entries with; any implementation gives the same digests.
   * @default the portable one (`@noble/hashes`); the enforcer runtime passes Node's.
   */
  readonly sha256Hex?: Sha256Hex;
  /**
   * The SHA-256 a binary snapshot's integrity is checked with (`fromBinary`, `toBinary`).
   * @default the portable one (`@noble/hashes`); the enforcer runtime passes Node's.
   */
  readonly sha256Bytes?: Sha256Bytes;
}

/** What a state holds, for status reports. */
export interface PolicyStateSize {
  readonly entries: number;
  readonly customerOverrides: number;
  readonly customersWithOverrides: number;
  readonly incidents: number;
  /** Distinct limit objects the overrides share. */
  readonly distinctOverrideLimits: number;
  /** Customers whose rules are prepared now (bounded by twice the cache size). */
  readonly preparedCustomers: number;
}

/** Builds a {@link PolicyState} entry by entry (`PolicyState.builder`). */
export interface PolicyStateBuilder {
  /** Adds a validated entry; false, and nothing added, when its key is already held. */
  add(entry: PolicyEntry): boolean;
  readonly count: number;
  /** The state, once the set is checked whole (and adds up to `checksum`, when given). */
  finish(checksum?: string): ParseResult<PolicyState>;
}

/** A delta checked against a state, ready to commit. */
interface VerifiedDelta {
  readonly version: number;
  readonly checksum: string;
  readonly changes: readonly { readonly key: string; readonly entry: PolicyEntry | null }[];
  readonly isCoreChanged: boolean;
}

export class PolicyState {
  #version: number;
  #sum: EntrySetSum;
  #settings: TSnapshotSettings | null = null;
  readonly #tiers = new Map<string, TSnapshotTier>();
  readonly #classes = new Map<string, TSnapshotEndpointClass>();
  readonly #candidates = new Map<string, TSnapshotCandidate>();
  readonly #descriptorRules = new Map<string, TSnapshotDescriptorRuleEntry>();
  readonly #outboundBudgets = new Map<string, TSnapshotOutboundBudgetEntry>();
  /** Entries of kinds this build does not know, by key: held for the checksum, never read. */
  readonly #unrecognized = new Map<string, unknown>();
  #descriptorIndex: DescriptorRuleIndex | null = null;
  /** Overrides loaded from a binary snapshot, read-only; null for a state built entry by entry. */
  #base: BinaryOverrides | null = null;
  /**
   * Each customer's overrides, over `#base`: a customer held here is read here only (an empty
   * list: its base overrides were all removed).
   */
  readonly #overrides = new Map<string, OverrideList>();
  #overrideCount = 0;
  #customersWithOverrides = 0;
  readonly #incidents = new Map<string, TSnapshotIncident>();
  readonly #incidentsByCustomer = new Map<string, TSnapshotIncident[]>();
  readonly #limits = new Map<string, TPolicyLimit>();
  readonly #customerCache: GenerationalMap<string, CustomerRules>;
  readonly #sha256Hex: Sha256Hex;
  readonly #sha256Bytes: Sha256Bytes | undefined;
  #core: PreparedCore | null = null;
  #prepared: PreparedSnapshot | null = null;

  private constructor(version: number, options: PolicyStateOptions) {
    this.#version = version;
    this.#sum = new EntrySetSum();
    this.#customerCache = new GenerationalMap({
      maxWeight: 2 * (options.customerCacheSize ?? 10_000),
    });
    this.#sha256Hex = options.sha256Hex ?? portableSha256Hex;
    this.#sha256Bytes = options.sha256Bytes;
  }

  /**
   * A state holding `entries` (validated ones: from `parseEntry`) at `version`; refused when the
   * set is not a policy (no settings, a default that names nothing, a reference to a missing
   * tier or class, an entry given twice). `checksum`, when given, must be the set's.
   */
  static build(
    version: number,
    entries: Iterable<PolicyEntry>,
    options: PolicyStateOptions & { readonly checksum?: string } = {},
  ): ParseResult<PolicyState> {
    const builder = PolicyState.builder(version, options);
    const errors: PolicyFieldError[] = [];
    for (const entry of entries) {
      if (!builder.add(entry)) {
        errors.push({ path: [entry.key], message: `"${entry.key}" is given twice` });
      }
    }
    if (errors.length > 0) return { ok: false, errors };
    return builder.finish(options.checksum);
  }

  /**
   * Builds a state one entry at a time, as a snapshot is read page by page: nothing but the state
   * itself is held. `add` returns false (and ignores the entry) when its key is already there.
   */
  static builder(version: number, options: PolicyStateOptions = {}): PolicyStateBuilder {
    const state = new PolicyState(version, options);
    let count = 0;
    return {
      add(entry) {
        if (state.#holds(entry)) return false;
        state.#put(entry);
        state.#sum.add(state.#digest(entry));
        count++;
        return true;
      },
      get count() {
        return count;
      },
      finish(checksum) {
        const errors = [
          ...state.#checkCore(null),
          ...state.#checkReferences(state.#allReferencing()),
        ];
        if (errors.length > 0) return { ok: false, errors };
        if (checksum !== undefined && checksum !== state.checksum) {
          return {
            ok: false,
            errors: [
              {
                path: ["checksum"],
                message: `the entries add up to checksum ${state.checksum}, not ${checksum}: the snapshot was altered or damaged`,
              },
            ],
          };
        }
        return { ok: true, value: state };
      },
    };
  }

  /** The state of a validated snapshot (`parseSnapshot`, `compileSnapshot`). */
  static fromSnapshot(snapshot: TSnapshot, options: PolicyStateOptions = {}): PolicyState {
    const built = PolicyState.build(
      snapshot.version,
      entriesOfSnapshotPolicy(snapshot.policy),
      options,
    );
    if (!built.ok) {
      throw new TypeError(`the snapshot is not a valid policy: ${built.errors[0]?.message}`);
    }
    return built.value;
  }

  /**
   * The state a binary snapshot holds (`binary-snapshot.ts`), refused with the field when the
   * bytes are damaged or not a policy. The overrides stay as the bytes and are looked up lazily;
   * the set's checksum is the one the snapshot carries (its digest vouches for it), so loading
   * costs one pass over the bytes, not a parse and a hash per entry.
   */
  static fromBinary(bytes: Uint8Array, options: PolicyStateOptions = {}): ParseResult<PolicyState> {
    const decoded = decodeBinarySnapshot(bytes, options.sha256Bytes);
    if (!decoded.ok) return decoded;
    const { version, checksum, coreEntries, overrides } = decoded.value;
    const state = new PolicyState(version, options);
    const errors: PolicyFieldError[] = [];
    for (const entry of coreEntries) {
      if (state.#holds(entry))
        errors.push({ path: [entry.key], message: `"${entry.key}" is given twice` });
      else state.#put(entry);
    }
    if (errors.length > 0) return { ok: false, errors };
    state.#base = overrides;
    state.#overrideCount = overrides.overrideCount;
    state.#customersWithOverrides = overrides.customerCount;
    for (const limit of overrides.limits) state.#limits.set(canonicalJson(limit), limit);
    state.#sum = new EntrySetSum(checksum);
    // The decoder checked that every class the overrides name exists; incidents are checked here.
    const problems = [
      ...state.#checkCore(null),
      ...state.#checkReferences(state.#incidentEntries()),
    ];
    if (problems.length > 0) return { ok: false, errors: problems };
    return { ok: true, value: state };
  }

  /** The state as a binary snapshot (what the control plane publishes). */
  toBinary(): Uint8Array {
    return encodeBinarySnapshot(
      { version: this.#version, checksum: this.checksum, entries: this.entries() },
      this.#sha256Bytes,
    );
  }

  get version(): number {
    return this.#version;
  }

  /** The set's checksum (`entries.ts`). */
  get checksum(): string {
    return this.#sum.hex;
  }

  get size(): PolicyStateSize {
    return {
      entries:
        (this.#settings === null ? 0 : 1) +
        this.#tiers.size +
        this.#classes.size +
        this.#candidates.size +
        this.#descriptorRules.size +
        this.#outboundBudgets.size +
        this.#unrecognized.size +
        this.#overrideCount +
        this.#incidents.size,
      customerOverrides: this.#overrideCount,
      customersWithOverrides: this.#customersWithOverrides,
      incidents: this.#incidents.size,
      distinctOverrideLimits: this.#limits.size,
      preparedCustomers: this.#customerCache.size,
    };
  }

  /** The entry under `key`, or undefined. */
  get(key: string): PolicyEntry | undefined {
    if (key === SETTINGS_KEY) {
      return this.#settings === null ? undefined : { kind: "settings", key, value: this.#settings };
    }
    if (key.startsWith("tier:")) {
      const value = this.#tiers.get(key.slice("tier:".length));
      return value === undefined ? undefined : { kind: "tier", key, value };
    }
    if (key.startsWith("endpoint-class:")) {
      const value = this.#classes.get(key.slice("endpoint-class:".length));
      return value === undefined ? undefined : { kind: "endpoint-class", key, value };
    }
    if (key.startsWith("descriptor-rule:")) {
      const value = this.#descriptorRules.get(key.slice("descriptor-rule:".length));
      return value === undefined ? undefined : { kind: "descriptor-rule", key, value };
    }
    if (key.startsWith("outbound:")) {
      const value = this.#outboundBudgets.get(key.slice("outbound:".length));
      return value === undefined ? undefined : { kind: "outbound-budget", key, value };
    }
    if (this.#unrecognized.has(key)) {
      return { kind: "unrecognized", key, value: this.#unrecognized.get(key) };
    }
    const scope = parseScope(key);
    if (scope?.kind === "customer") {
      const list = this.#overridesOf(scope.customerId);
      if (list === undefined) return undefined;
      for (let index = 0; index < list.length; index += 2) {
        if (list[index] === scope.endpointClass) {
          const value: TSnapshotCustomerOverride = {
            customerId: scope.customerId,
            endpointClass: scope.endpointClass,
            limit: list[index + 1] as TPolicyLimit,
          };
          return { kind: "customer-override", key, value };
        }
      }
      return undefined;
    }
    if (scope?.kind === "incident") {
      const value = this.#incidents.get(key);
      return value === undefined ? undefined : { kind: "incident", key, value };
    }
    if (scope?.kind === "candidate" && scope.part === undefined) {
      const value = this.#candidates.get(scope.candidateId);
      return value === undefined ? undefined : { kind: "candidate", key, value };
    }
    return undefined;
  }

  /** Every entry, in no particular order (for a snapshot of the state). */
  *entries(): IterableIterator<PolicyEntry> {
    if (this.#settings !== null) {
      yield { kind: "settings", key: SETTINGS_KEY, value: this.#settings };
    }
    for (const value of this.#tiers.values()) {
      yield { kind: "tier", key: tierEntryKey(value.name), value };
    }
    for (const value of this.#classes.values()) {
      yield { kind: "endpoint-class", key: endpointClassEntryKey(value.name), value };
    }
    for (const [customerId, list] of this.#allOverrides()) {
      for (let index = 0; index < list.length; index += 2) {
        const endpointClass = list[index] as string | null;
        yield {
          kind: "customer-override",
          key: overrideEntryKey(customerId, endpointClass),
          value: { customerId, endpointClass, limit: list[index + 1] as TPolicyLimit },
        };
      }
    }
    for (const [key, value] of this.#incidents) yield { kind: "incident", key, value };
    for (const value of this.#candidates.values()) {
      yield { kind: "candidate", key: candidateEntryKey(value.id), value };
    }
    for (const value of this.#descriptorRules.values()) {
      yield { kind: "descriptor-rule", key: descriptorRuleEntryKey(value.id), value };
    }
    for (const value of this.#outboundBudgets.values()) {
      yield { kind: "outbound-budget", key: outboundBudgetEntryKey(value.name), value };
    }
    for (const [key, value] of this.#unrecognized) yield { kind: "unrecognized", key, value };
  }

  /** Outbound budget `name` (scope `outbound:<name>`), or undefined when the policy has none. */
  outboundBudget(name: string): TSnapshotOutboundBudgetEntry | undefined {
    return this.#outboundBudgets.get(name);
  }

  /** The names of every outbound budget, in no particular order. */
  outboundBudgetNames(): string[] {
    return [...this.#outboundBudgets.keys()];
  }

  /**
   * Applies `delta` if it is the next one for this state and checks out (see the header); else
   * returns why not and changes nothing.
   */
  applyDelta(delta: TPolicyDelta): ParseResult<void> {
    const verified = this.#verify(delta);
    if (!verified.ok) return verified;
    const { changes, isCoreChanged } = verified.value;
    for (const { key, entry } of changes) {
      this.#remove(key);
      if (entry !== null) this.#put(entry);
    }
    this.#version = verified.value.version;
    this.#sum = new EntrySetSum(verified.value.checksum);
    if (isCoreChanged) this.#core = null;
    this.#prepared = null;
    return { ok: true, value: undefined };
  }

  /** The state indexed for `resolveLimits`; the same object until the next applied delta. */
  prepared(): PreparedSnapshot {
    if (this.#prepared !== null) return this.#prepared;
    if (this.#core === null) {
      const settings = this.#settings;
      if (settings === null) throw new TypeError("a policy state without settings");
      this.#core = prepareCore({
        settings,
        tiers: this.#tiers.values(),
        endpointClasses: this.#classes.values(),
        dryRunCandidates: this.#candidates.values(),
      });
    }
    if (this.#descriptorIndex === null) {
      this.#descriptorIndex = new DescriptorRuleIndex(this.#descriptorRules.values());
    }
    this.#prepared = new PreparedSnapshot(
      this.#version,
      this.#core,
      { get: (customerId) => this.#customerRules(customerId) },
      this.#descriptorIndex,
    );
    return this.#prepared;
  }

  #customerRules(customerId: string): CustomerRules | undefined {
    const cached = this.#customerCache.get(customerId);
    if (cached !== undefined) return cached;
    const list = this.#overridesOf(customerId);
    const incidents = this.#incidentsByCustomer.get(customerId);
    if (list === undefined && incidents === undefined) return undefined;
    const overrides: { endpointClass: string | null; limit: TPolicyLimit }[] = [];
    if (list !== undefined) {
      for (let index = 0; index < list.length; index += 2) {
        overrides.push({
          endpointClass: list[index] as string | null,
          limit: list[index + 1] as TPolicyLimit,
        });
      }
    }
    const rules = prepareCustomerRules(customerId, overrides, incidents ?? []);
    this.#customerCache.set(customerId, rules);
    return rules;
  }

  #verify(delta: TPolicyDelta): ParseResult<VerifiedDelta> {
    const refuse = (path: (string | number)[], message: string): ParseResult<VerifiedDelta> => ({
      ok: false,
      errors: [{ path, message }],
    });
    if (delta.base !== this.#version) {
      return refuse(
        ["base"],
        `delta ${delta.version} applies onto version ${delta.base}, but this policy is at version ${this.#version}`,
      );
    }
    if (delta.baseChecksum !== this.checksum) {
      return refuse(
        ["baseChecksum"],
        `delta ${delta.version} was computed from a set with checksum ${delta.baseChecksum}, but this version ${this.#version} has ${this.checksum}`,
      );
    }
    const sum = new EntrySetSum(this.checksum);
    const changes: { key: string; entry: PolicyEntry | null }[] = [];
    const errors: PolicyFieldError[] = [];
    let isCoreChanged = false;
    delta.changes.forEach((change, index) => {
      const current = this.get(change.key);
      if (current !== undefined) sum.remove(this.#digest(current));
      if (change.value === null) {
        if (current === undefined) {
          errors.push({
            path: ["changes", index, "key"],
            message: `removes "${change.key}", which this policy does not hold`,
          });
        }
        changes.push({ key: change.key, entry: null });
      } else {
        const parsed = parseEntry(change.key, change.value);
        if (!parsed.ok) {
          for (const error of parsed.errors) {
            errors.push({
              path: ["changes", index, "value", ...error.path.slice(1)],
              message: error.message,
            });
          }
          return;
        }
        sum.add(this.#digest(parsed.value));
        changes.push({ key: change.key, entry: parsed.value });
      }
      const kind = current?.kind ?? changes.at(-1)?.entry?.kind;
      if (
        kind !== "customer-override" &&
        kind !== "incident" &&
        kind !== "outbound-budget" &&
        kind !== "unrecognized"
      ) {
        isCoreChanged = true;
      }
    });
    if (errors.length > 0) return { ok: false, errors };
    if (sum.hex !== delta.checksum) {
      return refuse(
        ["checksum"],
        `delta ${delta.version} promises checksum ${delta.checksum}, but its changes give ${sum.hex}: the delta was altered or damaged`,
      );
    }
    const referencing = changes.flatMap(({ entry }) =>
      entry !== null && (entry.kind === "customer-override" || entry.kind === "incident")
        ? [entry]
        : [],
    );
    const problems = [
      ...(isCoreChanged ? this.#checkCore(changes) : []),
      ...this.#checkReferences(referencing, isCoreChanged ? changes : null),
    ];
    if (problems.length > 0) return { ok: false, errors: problems };
    return {
      ok: true,
      value: { version: delta.version, checksum: delta.checksum, changes, isCoreChanged },
    };
  }

  /** The core (settings, tiers, classes, candidates) with `changes` applied, checked whole. */
  #checkCore(
    changes: readonly { readonly key: string; readonly entry: PolicyEntry | null }[] | null,
  ): PolicyFieldError[] {
    let settings = this.#settings;
    const tiers = new Map(this.#tiers);
    const classes = new Map(this.#classes);
    const candidates = new Map(this.#candidates);
    for (const { key, entry } of changes ?? []) {
      switch (entryKindOfKey(key)) {
        case "settings":
          settings = entry?.kind === "settings" ? entry.value : null;
          break;
        case "tier":
          tiers.delete(key.slice("tier:".length));
          if (entry?.kind === "tier") tiers.set(entry.value.name, entry.value);
          break;
        case "endpoint-class":
          classes.delete(key.slice("endpoint-class:".length));
          if (entry?.kind === "endpoint-class") classes.set(entry.value.name, entry.value);
          break;
        case "candidate":
          candidates.delete(key.slice("candidate:".length));
          if (entry?.kind === "candidate") candidates.set(entry.value.id, entry.value);
          break;
        default:
          break;
      }
    }
    if (settings === null) return [{ path: [SETTINGS_KEY], message: "the policy has no settings" }];
    return checkSnapshotPolicyCore({
      defaultTier: settings.defaultTier,
      defaultEndpointClass: settings.defaultEndpointClass,
      tiers: [...tiers.values()],
      endpointClasses: [...classes.values()],
      customerOverrides: [],
      incidentOverrides: [],
      dryRunCandidates: [...candidates.values()],
    });
  }

  /** Overrides and incidents must name endpoint classes that exist (after `changes`). */
  #checkReferences(
    entries: Iterable<PolicyEntry>,
    changes: readonly { readonly key: string; readonly entry: PolicyEntry | null }[] | null = null,
  ): PolicyFieldError[] {
    const changed = new Map((changes ?? []).map((change) => [change.key, change.entry]));
    const classExists = (name: string) => {
      const key = endpointClassEntryKey(name);
      if (changed.has(key)) return changed.get(key) !== null;
      return this.#classes.has(name);
    };
    const errors: PolicyFieldError[] = [];
    for (const entry of entries) {
      if (entry.kind !== "customer-override" && entry.kind !== "incident") continue;
      const endpointClass = entry.value.endpointClass;
      if (endpointClass !== null && !classExists(endpointClass)) {
        errors.push({
          path: [entry.key, "endpointClass"],
          message: `there is no endpoint class "${endpointClass}"`,
        });
      }
    }
    return errors;
  }

  *#incidentEntries(): IterableIterator<PolicyEntry> {
    for (const [key, value] of this.#incidents) yield { kind: "incident", key, value };
  }

  /** A customer's overrides, or undefined when it has none. */
  #overridesOf(customerId: string): OverrideList | undefined {
    const own = this.#overrides.get(customerId);
    if (own !== undefined) return own.length === 0 ? undefined : own;
    return this.#base?.lookup(customerId);
  }

  /** A customer's overrides to change in place (copied over the base first). */
  #ownOverrides(customerId: string): OverrideList {
    let list = this.#overrides.get(customerId);
    if (list === undefined) {
      list = this.#base?.lookup(customerId) ?? [];
      this.#overrides.set(customerId, list);
    }
    return list;
  }

  /** Every customer with overrides and its list. */
  *#allOverrides(): IterableIterator<readonly [string, OverrideList]> {
    if (this.#base !== null) {
      for (const item of this.#base.customers()) {
        if (!this.#overrides.has(item[0])) yield item;
      }
    }
    for (const item of this.#overrides) if (item[1].length > 0) yield item;
  }

  *#allReferencing(): IterableIterator<PolicyEntry> {
    yield* this.#incidentEntries();
    for (const [customerId, list] of this.#allOverrides()) {
      for (let index = 0; index < list.length; index += 2) {
        const endpointClass = list[index] as string | null;
        if (endpointClass === null) continue;
        yield {
          kind: "customer-override",
          key: overrideEntryKey(customerId, endpointClass),
          value: { customerId, endpointClass, limit: list[index + 1] as TPolicyLimit },
        };
      }
    }
  }

  #digest(entry: PolicyEntry): string {
    return entryDigestHex(entry.key, entryText(entry), this.#sha256Hex);
  }

  /** Whether an entry under `entry`'s key is held (without parsing the key). */
  #holds(entry: PolicyEntry): boolean {
    switch (entry.kind) {
      case "settings":
        return this.#settings !== null;
      case "tier":
        return this.#tiers.has(entry.value.name);
      case "endpoint-class":
        return this.#classes.has(entry.value.name);
      case "candidate":
        return this.#candidates.has(entry.value.id);
      case "descriptor-rule":
        return this.#descriptorRules.has(entry.value.id);
      case "outbound-budget":
        return this.#outboundBudgets.has(entry.value.name);
      case "unrecognized":
        return this.#unrecognized.has(entry.key);
      case "incident":
        return this.#incidents.has(entry.key);
      case "customer-override": {
        const list = this.#overridesOf(entry.value.customerId);
        if (list === undefined) return false;
        for (let index = 0; index < list.length; index += 2) {
          if (list[index] === entry.value.endpointClass) return true;
        }
        return false;
      }
      default: {
        const unknown: never = entry;
        throw new TypeError(`unknown entry ${JSON.stringify(unknown)}`);
      }
    }
  }

  #intern(limit: TPolicyLimit): TPolicyLimit {
    const text = canonicalJson(limit);
    const shared = this.#limits.get(text);
    if (shared !== undefined) return shared;
    const frozen = Object.freeze({ ...limit });
    this.#limits.set(text, frozen);
    return frozen;
  }

  #put(entry: PolicyEntry): void {
    switch (entry.kind) {
      case "settings":
        this.#settings = entry.value;
        return;
      case "tier":
        this.#tiers.set(entry.value.name, entry.value);
        return;
      case "endpoint-class":
        this.#classes.set(entry.value.name, entry.value);
        return;
      case "candidate":
        this.#candidates.set(entry.value.id, entry.value);
        return;
      case "descriptor-rule":
        this.#descriptorRules.set(entry.value.id, entry.value);
        this.#descriptorIndex = null;
        return;
      case "outbound-budget":
        this.#outboundBudgets.set(entry.value.name, entry.value);
        return;
      case "unrecognized":
        this.#unrecognized.set(entry.key, entry.value);
        return;
      case "customer-override": {
        const { customerId, endpointClass, limit } = entry.value;
        const list = this.#ownOverrides(customerId);
        if (list.length === 0) this.#customersWithOverrides++;
        list.push(endpointClass, this.#intern(limit));
        this.#overrideCount++;
        this.#customerCache.delete(customerId);
        return;
      }
      case "incident": {
        const customerId = entry.value.customerId;
        this.#incidents.set(entry.key, entry.value);
        const list = this.#incidentsByCustomer.get(customerId);
        if (list === undefined) this.#incidentsByCustomer.set(customerId, [entry.value]);
        else list.push(entry.value);
        this.#customerCache.delete(customerId);
        return;
      }
      default: {
        const unknown: never = entry;
        throw new TypeError(`unknown entry ${JSON.stringify(unknown)}`);
      }
    }
  }

  #remove(key: string): void {
    const current = this.get(key);
    if (current === undefined) return;
    switch (current.kind) {
      case "settings":
        this.#settings = null;
        return;
      case "tier":
        this.#tiers.delete(current.value.name);
        return;
      case "endpoint-class":
        this.#classes.delete(current.value.name);
        return;
      case "candidate":
        this.#candidates.delete(current.value.id);
        return;
      case "descriptor-rule":
        this.#descriptorRules.delete(current.value.id);
        this.#descriptorIndex = null;
        return;
      case "outbound-budget":
        this.#outboundBudgets.delete(current.value.name);
        return;
      case "unrecognized":
        this.#unrecognized.delete(key);
        return;
      case "customer-override": {
        const { customerId, endpointClass } = current.value;
        const list = this.#ownOverrides(customerId);
        const index = list.findIndex(
          (item, position) => position % 2 === 0 && item === endpointClass,
        );
        if (index >= 0) list.splice(index, 2);
        if (list.length === 0) {
          this.#customersWithOverrides--;
          // An empty list stays while the base still holds the customer: it hides the base's.
          if (this.#base?.lookup(customerId) === undefined) this.#overrides.delete(customerId);
        }
        this.#overrideCount--;
        this.#customerCache.delete(customerId);
        return;
      }
      case "incident": {
        const customerId = current.value.customerId;
        this.#incidents.delete(key);
        const list = this.#incidentsByCustomer
          .get(customerId)
          ?.filter((item) => item.id !== current.value.id);
        if (list === undefined || list.length === 0) this.#incidentsByCustomer.delete(customerId);
        else this.#incidentsByCustomer.set(customerId, list);
        this.#customerCache.delete(customerId);
        return;
      }
      default: {
        const unknown: never = current;
        throw new TypeError(`unknown entry ${JSON.stringify(unknown)}`);
      }
    }
  }
}
