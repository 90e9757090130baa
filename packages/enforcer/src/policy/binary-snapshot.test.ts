import { describe, expect, it } from "vitest";
import { exampleSnapshot, tokenBucket } from "../testing/policy-factory";
import { BINARY_SNAPSHOT_LAYOUT, decodeBinarySnapshot } from "./binary-snapshot";
import { canonicalJson } from "./canonical";
import { formatFieldErrors } from "./errors";
import { PolicyState } from "./policy-state";
import { resolveLimits } from "./resolve";
import { sha256Bytes } from "./sha256";

/** The example policy with 40 more customers, each with one or two overrides sharing 3 limits. */
function manyOverrides(): PolicyState {
  const snapshot = exampleSnapshot(
    (input) => {
      input.customers ??= [];
      input.customerOverrides ??= [];
      for (let index = 0; index < 40; index++) {
        const id = `c-${String(index).padStart(3, "0")}`;
        input.customers.push({ id, displayName: id, tier: "free" });
        input.customerOverrides.push({
          customerId: id,
          endpointClass: null,
          limit: tokenBucket(100 + (index % 3), 10),
        });
        if (index % 2 === 0) {
          input.customerOverrides.push({
            customerId: id,
            endpointClass: "reports",
            limit: tokenBucket(50, 1),
          });
        }
      }
    },
    { version: 4 },
  );
  return PolicyState.fromSnapshot(snapshot);
}

const textsOf = (state: PolicyState) =>
  [...state.entries()].map((entry) => `${entry.key} ${canonicalJson(entry.value)}`).sort();

/** `bytes` with its trailing SHA-256 recomputed, so a test reaches the checks behind the digest. */
function resealed(bytes: Uint8Array): Uint8Array {
  const copy = bytes.slice();
  copy.set(sha256Bytes(copy.subarray(0, copy.length - 32)), copy.length - 32);
  return copy;
}

function view(bytes: Uint8Array): DataView {
  return new DataView(bytes.buffer, bytes.byteOffset, bytes.length);
}

/** Where the sections start, read the way the decoder reads them. */
function sections(bytes: Uint8Array) {
  const header = view(bytes);
  const json = header.getUint32(56, true) + header.getUint32(60, true) + header.getUint32(64, true);
  const customers = header.getUint32(68, true);
  const overrides = header.getUint32(72, true);
  const idOffsetsAt = Math.ceil((80 + json) / 4) * 4;
  const startsAt = idOffsetsAt + 4 * (customers + 1);
  const limitsAt = startsAt + 4 * (customers + 1);
  const classesAt = limitsAt + 4 * overrides;
  const idsAt = Math.ceil((classesAt + 2 * overrides) / 4) * 4;
  return { idOffsetsAt, startsAt, limitsAt, classesAt, idsAt, customers, overrides };
}

describe("binary policy snapshot", () => {
  it("round-trips a policy: same version, checksum, entries and sizes", () => {
    const state = manyOverrides();
    const loaded = PolicyState.fromBinary(state.toBinary());
    if (!loaded.ok) throw new Error(formatFieldErrors(loaded.errors));
    expect(loaded.value.version).toBe(4);
    expect(loaded.value.checksum).toBe(state.checksum);
    expect(textsOf(loaded.value)).toEqual(textsOf(state));
    expect(loaded.value.size).toEqual({ ...state.size, preparedCustomers: 0 });
  });

  it("looks customers up lazily and resolves them as the state built entry by entry does", () => {
    const state = manyOverrides();
    const loaded = PolicyState.fromBinary(state.toBinary());
    if (!loaded.ok) throw new Error(formatFieldErrors(loaded.errors));
    const nowMs = Date.parse("2025-06-02T10:00:00.000Z");
    for (const customerId of [
      "c-000",
      "c-001",
      "c-039",
      "globex",
      "acme",
      "nobody",
      "c-0",
      "c-0000",
    ]) {
      for (const path of ["/v1/things", "/v1/reports/9"]) {
        const request = { customerId, tier: "free", path };
        expect(resolveLimits(loaded.value.prepared(), request, nowMs)).toEqual(
          resolveLimits(state.prepared(), request, nowMs),
        );
      }
    }
    expect(loaded.value.size.preparedCustomers).toBeGreaterThan(0);
    expect(loaded.value.get("customer:c-002/endpoint:reports")?.value).toEqual(
      state.get("customer:c-002/endpoint:reports")?.value,
    );
    expect(loaded.value.get("customer:c-001/endpoint:reports")).toBeUndefined();
  });

  it("is the same bytes for the same set, whatever order the entries came in", () => {
    const state = manyOverrides();
    const reversed = PolicyState.build(state.version, [...state.entries()].reverse());
    if (!reversed.ok) throw new Error(formatFieldErrors(reversed.errors));
    expect(reversed.value.toBinary()).toEqual(state.toBinary());
  });

  const hostile: readonly {
    readonly name: string;
    readonly damage: (bytes: Uint8Array) => Uint8Array;
    readonly message: string;
  }[] = [
    {
      name: "shorter than a header",
      damage: (bytes) => bytes.subarray(0, 50),
      message: "snapshot.length: is 50 bytes, shorter than the 112 of an empty snapshot: truncated",
    },
    {
      name: "truncated",
      damage: (bytes) => bytes.subarray(0, bytes.length - 10),
      message: "truncated",
    },
    {
      name: "a wrong magic",
      damage: (bytes) => {
        const copy = bytes.slice();
        copy.set([0x7b, 0x22], 0); // '{"': JSON where binary belongs
        return copy;
      },
      message: 'snapshot.magic: must be "LPSN": this is not a binary policy snapshot',
    },
    {
      name: "another layout",
      damage: (bytes) => {
        const copy = bytes.slice();
        view(copy).setUint32(4, BINARY_SNAPSHOT_LAYOUT + 1, true);
        return copy;
      },
      message: `snapshot.layout: is ${BINARY_SNAPSHOT_LAYOUT + 1}, but this enforcer reads layout ${BINARY_SNAPSHOT_LAYOUT}: publisher and enforcer run different releases`,
    },
    {
      name: "one flipped bit",
      damage: (bytes) => {
        const copy = bytes.slice();
        const at = sections(copy).idsAt;
        copy[at] = (copy[at] ?? 0) ^ 1;
        return copy;
      },
      message:
        "snapshot.digest: the SHA-256 of the bytes does not match the trailer: damaged in transit or storage",
    },
    {
      name: "an oversized override count",
      damage: (bytes) => {
        const copy = bytes.slice();
        view(copy).setUint32(72, 0xffff_fff0, true);
        return resealed(copy);
      },
      message: "41 customers, 4294967280 overrides, 206 bytes of ids) need 25769807",
    },
    {
      name: "an id offset out of range",
      damage: (bytes) => {
        const copy = bytes.slice();
        view(copy).setUint32(sections(copy).idOffsetsAt + 4, 0x7fff_0000, true);
        return resealed(copy);
      },
      message:
        "snapshot.ids: [0] spans bytes 0 to 2147418112 of 206: an id is 1 to 128 bytes inside the id section",
    },
    {
      name: "ids out of order",
      damage: (bytes) => {
        const copy = bytes.slice();
        const { idsAt } = sections(copy);
        copy[idsAt + 4] = "9".charCodeAt(0); // c-000 becomes c-009, after c-001
        return resealed(copy);
      },
      message: "snapshot.ids: [1] is not after [0]: ids must be sorted and distinct",
    },
    {
      name: "a byte no customer id holds",
      damage: (bytes) => {
        const copy = bytes.slice();
        copy[sections(copy).idsAt + 1] = "/".charCodeAt(0);
        return resealed(copy);
      },
      message: "snapshot.ids: [0] holds a byte no customer id may hold (47)",
    },
    {
      name: "a limit index past the limits",
      damage: (bytes) => {
        const copy = bytes.slice();
        view(copy).setUint32(sections(copy).limitsAt, 99, true);
        return resealed(copy);
      },
      message: "snapshot.limitIndex: [0] is 99, but there are 5 limits",
    },
    {
      name: "a class index past the classes",
      damage: (bytes) => {
        const copy = bytes.slice();
        view(copy).setUint16(sections(copy).classesAt + 2, 7, true);
        return resealed(copy);
      },
      message: "snapshot.classIndex: [1] is 7: at most 1, increasing within a customer",
    },
    {
      name: "override starts that leave a customer none",
      damage: (bytes) => {
        const copy = bytes.slice();
        view(copy).setUint32(sections(copy).startsAt + 4, 0, true);
        return resealed(copy);
      },
      message: "snapshot.starts: [0] spans overrides 0 to 0 of 61: each customer has at least one",
    },
  ];

  it.each(hostile)("refuses $name with a message naming the field", ({ damage, message }) => {
    const bytes = manyOverrides().toBinary();
    const decoded = decodeBinarySnapshot(damage(bytes));
    expect(decoded.ok).toBe(false);
    if (decoded.ok) return;
    expect(formatFieldErrors(decoded.errors)).toContain(message);
    expect(PolicyState.fromBinary(damage(bytes)).ok).toBe(false);
  });
});
