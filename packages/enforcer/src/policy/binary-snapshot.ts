/**
 * A policy at one version as one compact binary value: what the control plane publishes under
 * `{policy}:snapshot:<version>` and what an enforcer loads at start. It exists for cold starts: a
 * million customer overrides load in a couple of seconds and stay as bytes, looked up one customer
 * at a time, instead of a million JSON entries each parsed, validated and hashed before the first
 * decision (and a million objects held afterwards).
 *
 * Layout (little-endian; offsets from the start):
 *
 * | bytes | content |
 * | --- | --- |
 * | 0-3 | magic `LPSN` |
 * | 4-7 | layout (u32, {@link BINARY_SNAPSHOT_LAYOUT}) |
 * | 8-11 | total length in bytes, trailer included (u32) |
 * | 12-19 | policy version (f64, a positive safe integer) |
 * | 20-51 | the entry set's checksum (`entries.ts`), 32 raw bytes |
 * | 52-55 | entries in the set (u32): the core entries plus the overrides |
 * | 56-79 | u32 each: bytes of the core JSON, of the class-name JSON, of the limit JSON; customers, overrides, bytes of customer ids |
 * | 80- | core JSON: `[[key, text], ...]`, every entry but the overrides (settings, tiers, classes, incidents, candidates: few) |
 * | | class-name JSON: `["name", ...]`: class index k > 0 is name k - 1, index 0 is "all endpoints" |
 * | | limit JSON: `[limit, ...]`: every distinct override limit once |
 * | | zero padding to a multiple of 4 |
 * | | id offsets: u32 x (customers + 1), into the id bytes |
 * | | override starts: u32 x (customers + 1), into the override columns |
 * | | limit index per override: u32 x overrides |
 * | | class index per override: u16 x overrides, zero padding to a multiple of 4 |
 * | | customer ids, ASCII, sorted bytewise, each once (binary search) |
 * | last 32 | SHA-256 of every byte before it |
 *
 * A customer's overrides sit together, in increasing class index, so the customer's rules are
 * one binary search away. Nothing read is trusted: `decodeBinarySnapshot` checks the digest, then
 * every length, offset, index and id, and refuses with a message naming the field; the checksum
 * of the set is taken from the bytes (the publisher computed it from the entries it encoded), so
 * loading never hashes a million entries.
 */
import { z } from "zod";
import { canonicalJson, compareCodeUnits } from "./canonical";
import { type PolicyEntry, parseEntryText, type TSnapshotEndpointClass } from "./entries";
import { fieldErrorsFromZod, type ParseResult, type PolicyFieldError } from "./errors";
import { CUSTOMER_ID_PATTERN, isName } from "./names";
import type { TPolicyLimit } from "./schemas";
import { ZExplicitPolicyLimit } from "./schemas/limits";
import { sha256Bytes as portableSha256Bytes } from "./sha256";

/** SHA-256 of bytes, 32 bytes; any implementation gives the same digest. */
export type Sha256Bytes = (bytes: Uint8Array) => Uint8Array;

/** The layout this module writes and reads; bump it (and `REDIS_PROTOCOL_VERSION`) on change. */
export const BINARY_SNAPSHOT_LAYOUT = 1;

const MAGIC = [0x4c, 0x50, 0x53, 0x4e]; // "LPSN"
const HEADER_BYTES = 80;
const DIGEST_BYTES = 32;
/** Class indexes are u16, and index 0 means all endpoints. */
const MAX_CLASS_NAMES = 0xffff;
const MAX_U32 = 0xffff_ffff;

/** A customer's overrides, flattened: [endpoint class or null, limit, class, limit, ...]. */
export type OverrideList = (string | null | TPolicyLimit)[];

/** What a snapshot is made of: the set at `version`, with its checksum (`EntrySetSum`). */
export interface BinarySnapshotInput {
  readonly version: number;
  readonly checksum: string;
  /** Validated entries (`parseEntry`), each key once. */
  readonly entries: Iterable<PolicyEntry>;
}

const encoder = new TextEncoder();

function writeHex(target: Uint8Array, offset: number, hex: string): void {
  for (let index = 0; index < DIGEST_BYTES; index++) {
    target[offset + index] = Number.parseInt(hex.slice(index * 2, index * 2 + 2), 16);
  }
}

/** `bytes` rounded up to a multiple of 4 (arithmetic, not bitwise: counts may pass 2^31). */
function padded(bytes: number): number {
  return Math.ceil(bytes / 4) * 4;
}

/**
 * Builds a binary snapshot entry by entry, as a publisher reads them in pages: it keeps each
 * override as two small numbers under its customer (limits and class names interned), never the
 * entries themselves. The same set gives the same bytes whatever order it came in.
 */
export class BinarySnapshotWriter {
  readonly #core: [string, string][] = [];
  /** Customer id -> [class id, limit id, ...] in the order added (ids are provisional). */
  readonly #byCustomer = new Map<string, number[]>();
  readonly #classIds = new Map<string, number>();
  readonly #limitIds = new Map<string, number>();
  #overrideCount = 0;

  /** Adds a validated entry (`parseEntry`); each key once. */
  add(entry: PolicyEntry): void {
    if (entry.kind !== "customer-override") {
      this.#core.push([entry.key, canonicalJson(entry.value)]);
      return;
    }
    const { customerId, endpointClass, limit } = entry.value;
    const classId = endpointClass === null ? 0 : idOf(this.#classIds, endpointClass, 1);
    const limitId = idOf(this.#limitIds, canonicalJson(limit), 0);
    const list = this.#byCustomer.get(customerId);
    if (list === undefined) this.#byCustomer.set(customerId, [classId, limitId]);
    else list.push(classId, limitId);
    this.#overrideCount++;
  }

  /** The snapshot of what was added, as the set at `version` with `checksum`. */
  finish(
    version: number,
    checksum: string,
    sha256Bytes: Sha256Bytes = portableSha256Bytes,
  ): Uint8Array {
    if (!Number.isSafeInteger(version) || version < 1) {
      throw new RangeError(`version must be a positive safe integer, not ${version}`);
    }
    if (!/^[0-9a-f]{64}$/.test(checksum)) {
      throw new TypeError(`checksum must be 64 hex characters, not "${checksum}"`);
    }
    const overrideCount = this.#overrideCount;
    // Final class indexes: by name (0 stays "all endpoints").
    const names = [...this.#classIds.keys()].sort(compareCodeUnits);
    if (names.length > MAX_CLASS_NAMES) {
      throw new RangeError(`at most ${MAX_CLASS_NAMES} endpoint classes carry overrides`);
    }
    const classIndex = new Uint32Array(names.length + 1);
    for (const [name, id] of this.#classIds) classIndex[id] = names.indexOf(name) + 1;
    // Customer ids are ASCII (CUSTOMER_ID_PATTERN), so code-unit order is byte order.
    const customers = [...this.#byCustomer.keys()].sort(compareCodeUnits);
    this.#core.sort(([a], [b]) => compareCodeUnits(a, b));
    // Final limit indexes: in order of first use, customers in id order and classes in index order.
    const limitTexts = [...this.#limitIds.keys()];
    const limitIndex = new Int32Array(limitTexts.length).fill(-1);
    const finalLimits: string[] = [];
    const sortedLists = customers.map((customerId) => {
      const list = this.#byCustomer.get(customerId) ?? [];
      const pairs: [number, number][] = [];
      for (let index = 0; index < list.length; index += 2) {
        pairs.push([classIndex[list[index] as number] ?? 0, list[index + 1] as number]);
      }
      pairs.sort((a, b) => a[0] - b[0]);
      for (const pair of pairs) {
        if (limitIndex[pair[1]] === -1) {
          limitIndex[pair[1]] = finalLimits.length;
          finalLimits.push(limitTexts[pair[1]] as string);
        }
        pair[1] = limitIndex[pair[1]] as number;
      }
      return pairs;
    });
    const coreJson = encoder.encode(JSON.stringify(this.#core));
    const classJson = encoder.encode(JSON.stringify(names));
    const limitJson = encoder.encode(`[${finalLimits.join(",")}]`);
    let idBytes = 0;
    for (const customerId of customers) idBytes += customerId.length;
    const customerCount = customers.length;
    const columnsAt = padded(HEADER_BYTES + coreJson.length + classJson.length + limitJson.length);
    const startsAt = columnsAt + 4 * (customerCount + 1);
    const limitsAt = startsAt + 4 * (customerCount + 1);
    const classesAt = limitsAt + 4 * overrideCount;
    const idsAt = padded(classesAt + 2 * overrideCount);
    const digestAt = idsAt + idBytes;
    const total = digestAt + DIGEST_BYTES;
    if (total > MAX_U32) throw new RangeError(`the snapshot would be ${total} bytes, over 4 GiB`);

    const bytes = new Uint8Array(total);
    const view = new DataView(bytes.buffer);
    bytes.set(MAGIC, 0);
    view.setUint32(4, BINARY_SNAPSHOT_LAYOUT, true);
    view.setUint32(8, total, true);
    view.setFloat64(12, version, true);
    writeHex(bytes, 20, checksum);
    view.setUint32(52, this.#core.length + overrideCount, true);
    view.setUint32(56, coreJson.length, true);
    view.setUint32(60, classJson.length, true);
    view.setUint32(64, limitJson.length, true);
    view.setUint32(68, customerCount, true);
    view.setUint32(72, overrideCount, true);
    view.setUint32(76, idBytes, true);
    bytes.set(coreJson, HEADER_BYTES);
    bytes.set(classJson, HEADER_BYTES + coreJson.length);
    bytes.set(limitJson, HEADER_BYTES + coreJson.length + classJson.length);
    let idOffset = 0;
    let override = 0;
    for (const [index, customerId] of customers.entries()) {
      view.setUint32(columnsAt + 4 * index, idOffset, true);
      view.setUint32(startsAt + 4 * index, override, true);
      for (let char = 0; char < customerId.length; char++) {
        bytes[idsAt + idOffset + char] = customerId.charCodeAt(char);
      }
      idOffset += customerId.length;
      for (const [klass, limit] of sortedLists[index] ?? []) {
        view.setUint32(limitsAt + 4 * override, limit, true);
        view.setUint16(classesAt + 2 * override, klass, true);
        override++;
      }
    }
    view.setUint32(columnsAt + 4 * customerCount, idOffset, true);
    view.setUint32(startsAt + 4 * customerCount, override, true);
    bytes.set(sha256Bytes(bytes.subarray(0, digestAt)), digestAt);
    return bytes;
  }
}

/** The id `key` has in `ids`, given the next one (`first` + size) when it has none yet. */
function idOf(ids: Map<string, number>, key: string, first: number): number {
  const id = ids.get(key);
  if (id !== undefined) return id;
  const next = first + ids.size;
  ids.set(key, next);
  return next;
}

/** The policy as one binary value (see the header). Throws on input that is not a policy set. */
export function encodeBinarySnapshot(
  input: BinarySnapshotInput,
  sha256Bytes: Sha256Bytes = portableSha256Bytes,
): Uint8Array {
  const writer = new BinarySnapshotWriter();
  for (const entry of input.entries) writer.add(entry);
  return writer.finish(input.version, input.checksum, sha256Bytes);
}

/** Whether each byte may appear in a customer id: first position, and any later one. */
const ID_FIRST_BYTE = new Uint8Array(256);
const ID_BYTE = new Uint8Array(256);
for (let byte = 0; byte < 128; byte++) {
  const char = String.fromCharCode(byte);
  ID_FIRST_BYTE[byte] = CUSTOMER_ID_PATTERN.test(char) ? 1 : 0;
  ID_BYTE[byte] = CUSTOMER_ID_PATTERN.test(`a${char}`) ? 1 : 0;
}

/**
 * The customer overrides of a binary snapshot, kept as its bytes and looked up lazily: a lookup is
 * a binary search over the sorted ids, with no allocation but the list it returns.
 */
export class BinaryOverrides {
  readonly #bytes: Uint8Array;
  readonly #view: DataView;
  readonly #idOffsetsAt: number;
  readonly #startsAt: number;
  readonly #limitsAt: number;
  readonly #classesAt: number;
  readonly #idsAt: number;
  readonly #classNames: readonly (string | null)[];
  readonly #limits: readonly TPolicyLimit[];
  /** Customers with at least one override. */
  readonly customerCount: number;
  readonly overrideCount: number;

  /** Built by `decodeBinarySnapshot` only, after every offset and index was checked. */
  constructor(layout: {
    readonly bytes: Uint8Array;
    readonly idOffsetsAt: number;
    readonly startsAt: number;
    readonly limitsAt: number;
    readonly classesAt: number;
    readonly idsAt: number;
    readonly classNames: readonly (string | null)[];
    readonly limits: readonly TPolicyLimit[];
    readonly customerCount: number;
    readonly overrideCount: number;
  }) {
    this.#bytes = layout.bytes;
    this.#view = new DataView(layout.bytes.buffer, layout.bytes.byteOffset, layout.bytes.length);
    this.#idOffsetsAt = layout.idOffsetsAt;
    this.#startsAt = layout.startsAt;
    this.#limitsAt = layout.limitsAt;
    this.#classesAt = layout.classesAt;
    this.#idsAt = layout.idsAt;
    this.#classNames = layout.classNames;
    this.#limits = layout.limits;
    this.customerCount = layout.customerCount;
    this.overrideCount = layout.overrideCount;
  }

  /** The distinct limits the overrides share (parsed, frozen). */
  get limits(): readonly TPolicyLimit[] {
    return this.#limits;
  }

  /** Bytes held. */
  get byteLength(): number {
    return this.#bytes.byteLength;
  }

  /** `customerId`'s overrides, or undefined when it has none. */
  lookup(customerId: string): OverrideList | undefined {
    let low = 0;
    let high = this.customerCount - 1;
    while (low <= high) {
      const middle = (low + high) >>> 1;
      const order = this.#compareId(middle, customerId);
      if (order === 0) return this.#listAt(middle);
      if (order < 0) low = middle + 1;
      else high = middle - 1;
    }
    return undefined;
  }

  /** Every customer and its overrides, in id order. */
  *customers(): IterableIterator<readonly [string, OverrideList]> {
    for (let index = 0; index < this.customerCount; index++) {
      yield [this.#idAt(index), this.#listAt(index)];
    }
  }

  #idOffset(index: number): number {
    return this.#view.getUint32(this.#idOffsetsAt + 4 * index, true);
  }

  #idAt(index: number): string {
    const start = this.#idsAt + this.#idOffset(index);
    const end = this.#idsAt + this.#idOffset(index + 1);
    return String.fromCharCode(...this.#bytes.subarray(start, end));
  }

  /** The stored id at `index` compared with `customerId` (negative: the stored one sorts first). */
  #compareId(index: number, customerId: string): number {
    const start = this.#idsAt + this.#idOffset(index);
    const length = this.#idsAt + this.#idOffset(index + 1) - start;
    const shorter = Math.min(length, customerId.length);
    for (let char = 0; char < shorter; char++) {
      const difference = (this.#bytes[start + char] as number) - customerId.charCodeAt(char);
      if (difference !== 0) return difference;
    }
    return length - customerId.length;
  }

  #listAt(index: number): OverrideList {
    const view = this.#view;
    const first = view.getUint32(this.#startsAt + 4 * index, true);
    const end = view.getUint32(this.#startsAt + 4 * (index + 1), true);
    const list: OverrideList = [];
    for (let override = first; override < end; override++) {
      list.push(
        this.#classNames[view.getUint16(this.#classesAt + 2 * override, true)] ?? null,
        this.#limits[view.getUint32(this.#limitsAt + 4 * override, true)] as TPolicyLimit,
      );
    }
    return list;
  }
}

/** A binary snapshot, checked: the few core entries parsed, the overrides left as bytes. */
export interface DecodedBinarySnapshot {
  readonly version: number;
  readonly checksum: string;
  /** Entries in the set, overrides included. */
  readonly entries: number;
  /** Every entry but the customer overrides, validated (`parseEntry`). */
  readonly coreEntries: readonly PolicyEntry[];
  readonly overrides: BinaryOverrides;
}

const ZCoreEntries = z.array(z.tuple([z.string(), z.string()]), {
  error: "must be a JSON array of [key, text] pairs",
});
const ZClassNames = z.array(
  z.string().refine(isName, { error: "must be an endpoint class name" }),
  {
    error: "must be a JSON array of endpoint class names",
  },
);
const ZLimits = z.array(ZExplicitPolicyLimit, { error: "must be a JSON array of limits" });

function jsonSection<T>(
  bytes: Uint8Array,
  start: number,
  length: number,
  schema: z.ZodType<T>,
  field: string,
): ParseResult<T> {
  let value: unknown;
  try {
    value = JSON.parse(
      new TextDecoder("utf-8", { fatal: true }).decode(bytes.subarray(start, start + length)),
    );
  } catch (error: unknown) {
    const reason = error instanceof Error ? error.message : String(error);
    return {
      ok: false,
      errors: [{ path: ["snapshot", field], message: `is not valid JSON: ${reason}` }],
    };
  }
  const parsed = schema.safeParse(value);
  return parsed.success
    ? { ok: true, value: parsed.data }
    : { ok: false, errors: fieldErrorsFromZod(parsed.error, ["snapshot", field]) };
}

function refuse<T>(field: string, message: string): ParseResult<T> {
  return { ok: false, errors: [{ path: ["snapshot", field], message }] };
}

function hexOf(bytes: Uint8Array): string {
  let hex = "";
  for (const byte of bytes) hex += byte.toString(16).padStart(2, "0");
  return hex;
}

/**
 * Checks and opens a binary snapshot (see the header). Refuses, naming the field, anything that
 * is not exactly what `encodeBinarySnapshot` writes: a wrong magic or layout, a length that is not
 * the value's, a digest that does not match, counts that need more bytes than there are, an offset
 * out of order or out of range, an id that is not a customer id or out of order, an index that
 * names no class or limit, a class no endpoint class entry defines.
 */
export function decodeBinarySnapshot(
  bytes: Uint8Array,
  sha256Bytes: Sha256Bytes = portableSha256Bytes,
): ParseResult<DecodedBinarySnapshot> {
  if (bytes.length < HEADER_BYTES + DIGEST_BYTES) {
    return refuse(
      "length",
      `is ${bytes.length} bytes, shorter than the ${HEADER_BYTES + DIGEST_BYTES} of an empty snapshot: truncated`,
    );
  }
  if (MAGIC.some((byte, index) => bytes[index] !== byte)) {
    return refuse("magic", `must be "LPSN": this is not a binary policy snapshot`);
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.length);
  const layout = view.getUint32(4, true);
  if (layout !== BINARY_SNAPSHOT_LAYOUT) {
    return refuse(
      "layout",
      `is ${layout}, but this enforcer reads layout ${BINARY_SNAPSHOT_LAYOUT}: publisher and enforcer run different releases`,
    );
  }
  const total = view.getUint32(8, true);
  if (total !== bytes.length) {
    return refuse(
      "length",
      `the header says ${total} bytes, but the value is ${bytes.length}: ${total > bytes.length ? "truncated" : "extra bytes"}`,
    );
  }
  const digestAt = total - DIGEST_BYTES;
  const digest = sha256Bytes(bytes.subarray(0, digestAt));
  for (let index = 0; index < DIGEST_BYTES; index++) {
    if (digest[index] !== bytes[digestAt + index]) {
      return refuse(
        "digest",
        "the SHA-256 of the bytes does not match the trailer: damaged in transit or storage",
      );
    }
  }
  const version = view.getFloat64(12, true);
  if (!Number.isSafeInteger(version) || version < 1) {
    return refuse("version", `must be a positive safe integer, not ${version}`);
  }
  const checksum = hexOf(bytes.subarray(20, 52));
  const entries = view.getUint32(52, true);
  const coreBytes = view.getUint32(56, true);
  const classBytes = view.getUint32(60, true);
  const limitBytes = view.getUint32(64, true);
  const customerCount = view.getUint32(68, true);
  const overrideCount = view.getUint32(72, true);
  const idBytes = view.getUint32(76, true);
  const columnsAt = padded(HEADER_BYTES + coreBytes + classBytes + limitBytes);
  const startsAt = columnsAt + 4 * (customerCount + 1);
  const limitsAt = startsAt + 4 * (customerCount + 1);
  const classesAt = limitsAt + 4 * overrideCount;
  const idsAt = padded(classesAt + 2 * overrideCount);
  const needed = idsAt + idBytes + DIGEST_BYTES;
  if (needed !== total) {
    return refuse(
      "counts",
      `the sections (${coreBytes} + ${classBytes} + ${limitBytes} bytes of JSON, ${customerCount} customers, ${overrideCount} overrides, ${idBytes} bytes of ids) need ${needed} bytes, but the snapshot is ${total}`,
    );
  }
  if (overrideCount < customerCount) {
    return refuse("counts", `${customerCount} customers cannot share ${overrideCount} overrides`);
  }

  const core = jsonSection(bytes, HEADER_BYTES, coreBytes, ZCoreEntries, "core");
  if (!core.ok) return core;
  const names = jsonSection(bytes, HEADER_BYTES + coreBytes, classBytes, ZClassNames, "classes");
  if (!names.ok) return names;
  const limits = jsonSection(
    bytes,
    HEADER_BYTES + coreBytes + classBytes,
    limitBytes,
    ZLimits,
    "limits",
  );
  if (!limits.ok) return limits;
  if (core.value.length + overrideCount !== entries) {
    return refuse(
      "entries",
      `says ${entries}, but the snapshot holds ${core.value.length} core entries and ${overrideCount} overrides`,
    );
  }

  const coreEntries: PolicyEntry[] = [];
  const classes = new Set<string>();
  const errors: PolicyFieldError[] = [];
  for (const [key, text] of core.value) {
    const parsed = parseEntryText(key, text);
    if (!parsed.ok) {
      errors.push(...parsed.errors);
    } else if (parsed.value.kind === "customer-override") {
      errors.push({
        path: [key],
        message: "an override belongs in the override table, not the core",
      });
    } else {
      coreEntries.push(parsed.value);
      if (parsed.value.kind === "endpoint-class") {
        classes.add((parsed.value.value as TSnapshotEndpointClass).name);
      }
    }
    if (errors.length >= 20) break;
  }
  if (errors.length > 0) return { ok: false, errors };
  for (const [index, name] of names.value.entries()) {
    if (!classes.has(name)) {
      return refuse(
        "classes",
        `[${index}] "${name}" is overridden, but the snapshot has no endpoint class "${name}"`,
      );
    }
  }

  const structure = checkColumns(bytes, view, {
    columnsAt,
    startsAt,
    limitsAt,
    classesAt,
    idsAt,
    idBytes,
    customerCount,
    overrideCount,
    classCount: names.value.length,
    limitCount: limits.value.length,
  });
  if (structure !== null) return refuse(structure.field, structure.message);

  return {
    ok: true,
    value: {
      version,
      checksum,
      entries,
      coreEntries,
      overrides: new BinaryOverrides({
        bytes,
        idOffsetsAt: columnsAt,
        startsAt,
        limitsAt,
        classesAt,
        idsAt,
        classNames: [null, ...names.value],
        limits: limits.value.map((limit) => Object.freeze(limit)),
        customerCount,
        overrideCount,
      }),
    },
  };
}

/** Every offset, index and id of the columns; null when all hold, else the first problem. */
function checkColumns(
  bytes: Uint8Array,
  view: DataView,
  at: {
    readonly columnsAt: number;
    readonly startsAt: number;
    readonly limitsAt: number;
    readonly classesAt: number;
    readonly idsAt: number;
    readonly idBytes: number;
    readonly customerCount: number;
    readonly overrideCount: number;
    readonly classCount: number;
    readonly limitCount: number;
  },
): { field: string; message: string } | null {
  const { idsAt, customerCount } = at;
  let previousStart = -1;
  let previousEnd = -1;
  let idEnd = view.getUint32(at.columnsAt, true);
  let overrideEnd = view.getUint32(at.startsAt, true);
  if (idEnd !== 0) return { field: "ids", message: `[0] starts at ${idEnd}, not 0` };
  if (overrideEnd !== 0) return { field: "starts", message: `[0] is ${overrideEnd}, not 0` };
  for (let index = 0; index < customerCount; index++) {
    const idStart = idEnd;
    idEnd = view.getUint32(at.columnsAt + 4 * (index + 1), true);
    if (idEnd <= idStart || idEnd - idStart > 128 || idEnd > at.idBytes) {
      return {
        field: "ids",
        message: `[${index}] spans bytes ${idStart} to ${idEnd} of ${at.idBytes}: an id is 1 to 128 bytes inside the id section`,
      };
    }
    if (ID_FIRST_BYTE[bytes[idsAt + idStart] as number] !== 1) {
      return { field: "ids", message: `[${index}] does not start with a letter or digit` };
    }
    for (let byte = idsAt + idStart + 1; byte < idsAt + idEnd; byte++) {
      if (ID_BYTE[bytes[byte] as number] !== 1) {
        return {
          field: "ids",
          message: `[${index}] holds a byte no customer id may hold (${bytes[byte]})`,
        };
      }
    }
    if (
      previousStart >= 0 &&
      compareRanges(bytes, previousStart, previousEnd, idsAt + idStart, idsAt + idEnd) >= 0
    ) {
      return {
        field: "ids",
        message: `[${index}] is not after [${index - 1}]: ids must be sorted and distinct`,
      };
    }
    previousStart = idsAt + idStart;
    previousEnd = idsAt + idEnd;
    const first = overrideEnd;
    overrideEnd = view.getUint32(at.startsAt + 4 * (index + 1), true);
    if (overrideEnd <= first || overrideEnd > at.overrideCount) {
      return {
        field: "starts",
        message: `[${index}] spans overrides ${first} to ${overrideEnd} of ${at.overrideCount}: each customer has at least one`,
      };
    }
    let previousClass = -1;
    for (let override = first; override < overrideEnd; override++) {
      const klass = view.getUint16(at.classesAt + 2 * override, true);
      const limit = view.getUint32(at.limitsAt + 4 * override, true);
      if (klass > at.classCount || klass <= previousClass) {
        return {
          field: "classIndex",
          message: `[${override}] is ${klass}: at most ${at.classCount}, increasing within a customer`,
        };
      }
      if (limit >= at.limitCount) {
        return {
          field: "limitIndex",
          message: `[${override}] is ${limit}, but there are ${at.limitCount} limits`,
        };
      }
      previousClass = klass;
    }
  }
  if (idEnd !== at.idBytes) {
    return {
      field: "ids",
      message: `end at byte ${idEnd}, not at the section's end ${at.idBytes}`,
    };
  }
  if (overrideEnd !== at.overrideCount) {
    return {
      field: "starts",
      message: `end at override ${overrideEnd}, not at ${at.overrideCount}`,
    };
  }
  return null;
}

function compareRanges(
  bytes: Uint8Array,
  aStart: number,
  aEnd: number,
  bStart: number,
  bEnd: number,
): number {
  const shorter = Math.min(aEnd - aStart, bEnd - bStart);
  for (let index = 0; index < shorter; index++) {
    const difference = (bytes[aStart + index] as number) - (bytes[bStart + index] as number);
    if (difference !== 0) return difference;
  }
  return aEnd - aStart - (bEnd - bStart);
}
