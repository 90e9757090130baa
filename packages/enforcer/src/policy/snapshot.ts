/**
 * The compiled snapshot: what the control plane publishes to Redis and every enforcer applies.
 *
 * - It holds everything resolution needs and nothing else (see `ZSnapshotPolicy`): the customer
 *   registry stays in Postgres, so a million customers without overrides cost nothing here.
 * - Collections are in canonical order and every default is explicit, so the same policy always
 *   compiles to the same bytes.
 * - `version` is a positive integer chosen by the publisher, greater than every earlier one.
 * - `checksum` is the SHA-256 of the canonical JSON of every other field (`canonicalJson`): an
 *   enforcer recomputes it and refuses a snapshot that was altered or truncated on the way.
 */
import { canonicalJson } from "./canonical";
import { compileEntries, type PolicyEntry, snapshotPolicyOfEntries } from "./entries";
import { fieldErrorsFromZod, type ParseResult, parseJsonInput } from "./errors";
import {
  SNAPSHOT_SCHEMA_VERSION,
  type TPolicyDocument,
  type TSnapshot,
  type TSnapshotPolicy,
  ZSnapshot,
} from "./schemas";
import { sha256Hex } from "./sha256";

/** Options of {@link compileSnapshot}. */
export interface CompileSnapshotOptions {
  /** The version being published: a positive integer above every earlier one. */
  readonly version: number;
  /** When it is compiled: an ISO 8601 instant (wall clock), stored normalised to UTC. */
  readonly compiledAt: string;
}

/**
 * Compiles a parsed policy document into a snapshot. Incident overrides that have already expired
 * at `compiledAt` are left out (they can never apply again); ones that are active or start later
 * are kept, and each enforcer applies them by its own clock.
 *
 * Throws when `version` is not a positive safe integer or `compiledAt` is not an instant: both
 * come from the publisher, not from a user.
 */
export function compileSnapshot(doc: TPolicyDocument, options: CompileSnapshotOptions): TSnapshot {
  if (!Number.isSafeInteger(options.version) || options.version < 1) {
    throw new RangeError(
      `snapshot version must be a positive safe integer, not ${options.version}`,
    );
  }
  const compiledAtMs = Date.parse(options.compiledAt);
  if (!Number.isFinite(compiledAtMs)) {
    throw new RangeError(
      `compiledAt must be an ISO 8601 instant, not ${JSON.stringify(options.compiledAt)}`,
    );
  }
  const policy: TSnapshotPolicy = snapshotPolicyOfEntries(compileEntries(doc, compiledAtMs));
  const unsigned = {
    schemaVersion: SNAPSHOT_SCHEMA_VERSION,
    version: options.version,
    compiledAt: new Date(compiledAtMs).toISOString(),
    policy,
  } as const;
  return { ...unsigned, checksum: computeSnapshotChecksum(unsigned) };
}

/**
 * The snapshot a set of entries makes (collections in canonical order), at `version`: for a
 * bootstrap file, a small tool, or the part of a policy one customer's resolution needs.
 */
export function snapshotOfEntries(
  entries: Iterable<PolicyEntry>,
  options: CompileSnapshotOptions,
): TSnapshot {
  const unsigned = {
    schemaVersion: SNAPSHOT_SCHEMA_VERSION,
    version: options.version,
    compiledAt: new Date(Date.parse(options.compiledAt)).toISOString(),
    policy: snapshotPolicyOfEntries(entries),
  } as const;
  return { ...unsigned, checksum: computeSnapshotChecksum(unsigned) };
}

/** The checksum a snapshot must carry: SHA-256 of the canonical JSON of all its other fields. */
export function computeSnapshotChecksum(snapshot: Omit<TSnapshot, "checksum">): string {
  const { schemaVersion, version, compiledAt, policy } = snapshot;
  return sha256Hex(canonicalJson({ schemaVersion, version, compiledAt, policy }));
}

/**
 * Validates a snapshot received from Redis (JSON text, or an already parsed value): its shape, its
 * cross-references and its checksum. An enforcer applies it only when this returns `ok`, and
 * otherwise keeps its last good snapshot and reports the errors.
 */
export function parseSnapshot(input: unknown): ParseResult<TSnapshot> {
  const json = parseJsonInput(input, "the snapshot");
  if (!json.ok) return json;
  const result = ZSnapshot.safeParse(json.value);
  if (!result.success) return { ok: false, errors: fieldErrorsFromZod(result.error) };
  const snapshot = result.data;
  const expected = computeSnapshotChecksum(snapshot);
  if (expected !== snapshot.checksum) {
    return {
      ok: false,
      errors: [
        {
          path: ["checksum"],
          message: `checksum ${snapshot.checksum} does not match the content (${expected}): the snapshot was altered or damaged after it was compiled`,
        },
      ],
    };
  }
  return { ok: true, value: snapshot };
}

/**
 * Whether an enforcer running `current` (null: none yet) should apply `next`: only a strictly
 * higher version. A duplicate announcement or a late, older one changes nothing.
 */
export function isNewerSnapshot(
  current: Pick<TSnapshot, "version"> | null,
  next: Pick<TSnapshot, "version">,
): boolean {
  return current === null || next.version > current.version;
}
