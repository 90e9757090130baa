/**
 * The last good policy kept on disk (`controlPlane.policyCache`), so an enforcer that starts while
 * Redis is unreachable, or holds no policy, enforces the limits it last ran instead of none.
 *
 * What is written: the policy in force after each version applied (never one refused: a refused
 * delta or snapshot leaves the state in force as it was, and nothing is saved for it), as the
 * binary snapshot the control plane publishes (`binary-snapshot.ts`: version, the entry set's
 * checksum, a SHA-256 of its bytes) behind a small header:
 *
 * | bytes | content |
 * | --- | --- |
 * | 0-3 | magic `LPPC` |
 * | 4-7 | file layout (u32, {@link POLICY_CACHE_LAYOUT}) |
 * | 8-11 | Redis protocol version (u32, `REDIS_PROTOCOL_VERSION` of `publication/protocol.ts`) |
 * | 12-15 | bytes of the key prefix (u32) |
 * | 16-23 | when it was saved, epoch ms (f64) |
 * | 24- | the key prefix, UTF-8, zero padding to a multiple of 8 |
 * | next 32 | SHA-256 of the header bytes before it |
 * | rest | the binary snapshot |
 *
 * How: into a temporary file beside it, fsync, rename over the old one, fsync the directory, so a
 * crash leaves the old file or the new one, never half of one. Saves are serialised and
 * coalesced: at most one every `saveIntervalMs`, always the newest policy.
 *
 * Reading trusts nothing: a file that is missing is no cache; one that cannot be read, is not a
 * regular file, is truncated, fails a digest, is of another layout or protocol version, or was
 * saved for another key prefix is refused with the path and the problem, and the enforcer runs as
 * it would without a cache (`withoutPolicy`).
 */
import { randomBytes } from "node:crypto";
import { open, readFile, rename, stat, unlink } from "node:fs/promises";
import path from "node:path";
import type { Clock } from "../limiter/clock";
import type { TimerHandle, Timers } from "../limiter/timers";
import type { Sha256Bytes } from "../policy/binary-snapshot";
import { formatFieldErrors } from "../policy/errors";
import { PolicyState, type PolicyStateOptions } from "../policy/policy-state";
import { REDIS_PROTOCOL_VERSION } from "../publication/protocol";
import type { EnforcerLogger } from "./logger";

/** The header layout this module writes and reads; bump it on change. */
export const POLICY_CACHE_LAYOUT = 1;

const MAGIC = [0x4c, 0x50, 0x50, 0x43]; // "LPPC"
const FIXED_BYTES = 24;
const DIGEST_BYTES = 32;
/** A key prefix is at most this long (`REDIS_KEY_PREFIX` allows 32; room for embedders). */
const MAX_PREFIX_BYTES = 1_024;

const encoder = new TextEncoder();

function padded8(bytes: number): number {
  return Math.ceil(bytes / 8) * 8;
}

/** What a cache file says about itself. */
export interface PolicyCacheHeader {
  readonly protocolVersion: number;
  readonly keyPrefix: string;
  readonly savedAtMs: number;
}

/** The file's bytes: the header for `keyPrefix` at `savedAtMs`, then `snapshot`. */
export function encodePolicyCache(
  snapshot: Uint8Array,
  header: PolicyCacheHeader,
  sha256Bytes: Sha256Bytes,
): Uint8Array {
  const prefix = encoder.encode(header.keyPrefix);
  if (prefix.length > MAX_PREFIX_BYTES) {
    throw new RangeError(`key prefix is ${prefix.length} bytes, more than ${MAX_PREFIX_BYTES}`);
  }
  const headerBytes = FIXED_BYTES + padded8(prefix.length);
  const bytes = new Uint8Array(headerBytes + DIGEST_BYTES + snapshot.length);
  bytes.set(MAGIC, 0);
  const view = new DataView(bytes.buffer);
  view.setUint32(4, POLICY_CACHE_LAYOUT, true);
  view.setUint32(8, header.protocolVersion, true);
  view.setUint32(12, prefix.length, true);
  view.setFloat64(16, header.savedAtMs, true);
  bytes.set(prefix, FIXED_BYTES);
  bytes.set(sha256Bytes(bytes.subarray(0, headerBytes)), headerBytes);
  bytes.set(snapshot, headerBytes + DIGEST_BYTES);
  return bytes;
}

/** A cache file checked: its header, and the policy it holds. */
export interface DecodedPolicyCache {
  readonly savedAtMs: number;
  readonly state: PolicyState;
}

export type PolicyCacheDecode =
  | { readonly ok: true; readonly value: DecodedPolicyCache }
  | { readonly ok: false; readonly problem: string };

/**
 * Checks a cache file's bytes for `keyPrefix` and opens the policy in it. Refuses, in one sentence,
 * anything but what {@link encodePolicyCache} writes for this prefix and this release.
 */
export function decodePolicyCache(
  bytes: Uint8Array,
  keyPrefix: string,
  options: PolicyStateOptions & { readonly sha256Bytes: Sha256Bytes },
): PolicyCacheDecode {
  const refuse = (problem: string): PolicyCacheDecode => ({ ok: false, problem });
  if (bytes.length < FIXED_BYTES + DIGEST_BYTES) {
    return refuse(`truncated: ${bytes.length} bytes, shorter than the header`);
  }
  if (MAGIC.some((byte, index) => bytes[index] !== byte)) {
    return refuse(`not a policy cache file (it does not start with "LPPC")`);
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.length);
  const layout = view.getUint32(4, true);
  if (layout !== POLICY_CACHE_LAYOUT) {
    return refuse(
      `file layout ${layout}, but this release reads layout ${POLICY_CACHE_LAYOUT}: written by another release`,
    );
  }
  const prefixBytes = view.getUint32(12, true);
  const headerBytes = FIXED_BYTES + padded8(prefixBytes);
  if (prefixBytes > MAX_PREFIX_BYTES || bytes.length < headerBytes + DIGEST_BYTES) {
    return refuse(`truncated: ${bytes.length} bytes, shorter than its header says`);
  }
  const digest = options.sha256Bytes(bytes.subarray(0, headerBytes));
  const stored = bytes.subarray(headerBytes, headerBytes + DIGEST_BYTES);
  if (digest.some((byte, index) => stored[index] !== byte)) {
    return refuse("the header's SHA-256 does not match: the file was altered or damaged");
  }
  const protocolVersion = view.getUint32(8, true);
  if (protocolVersion !== REDIS_PROTOCOL_VERSION) {
    return refuse(
      `saved under Redis protocol version ${protocolVersion}, but this release speaks ${REDIS_PROTOCOL_VERSION}`,
    );
  }
  const savedFor = new TextDecoder().decode(bytes.subarray(FIXED_BYTES, FIXED_BYTES + prefixBytes));
  if (savedFor !== keyPrefix) {
    return refuse(
      `saved for key prefix ${JSON.stringify(savedFor)}, but this enforcer uses ${JSON.stringify(keyPrefix)}`,
    );
  }
  const savedAtMs = view.getFloat64(16, true);
  const loaded = PolicyState.fromBinary(bytes.subarray(headerBytes + DIGEST_BYTES), options);
  if (!loaded.ok) return refuse(`its snapshot is refused: ${formatFieldErrors(loaded.errors)}`);
  return { ok: true, value: { savedAtMs, state: loaded.value } };
}

export type PolicyCacheRead =
  | { readonly status: "ok"; readonly state: PolicyState; readonly savedAtMs: number }
  | { readonly status: "missing" }
  | { readonly status: "refused"; readonly problem: string };

/** Why a file system call failed, in words (its code, and the message without the path). */
export function describeFileError(error: unknown): string {
  const code =
    error !== null && typeof error === "object" && "code" in error ? String(error.code) : null;
  const message = error instanceof Error ? error.message : String(error);
  return code === null ? message : `${code}: ${message.split(",")[0]?.replace(/^\w+: /, "")}`;
}

function isMissing(error: unknown): boolean {
  return error !== null && typeof error === "object" && "code" in error && error.code === "ENOENT";
}

/**
 * Reads and checks the cache file at `filePath` for `keyPrefix`. Never throws: a missing file is
 * `missing`, anything else wrong is `refused` with the problem.
 */
export async function readPolicyCache(
  filePath: string,
  keyPrefix: string,
  options: PolicyStateOptions & { readonly sha256Bytes: Sha256Bytes },
): Promise<PolicyCacheRead> {
  let bytes: Uint8Array;
  try {
    const info = await stat(filePath);
    if (!info.isFile()) {
      return {
        status: "refused",
        problem: `not a regular file (${info.isDirectory() ? "a directory" : "a special file"})`,
      };
    }
    bytes = await readFile(filePath);
  } catch (error: unknown) {
    if (isMissing(error)) return { status: "missing" };
    return { status: "refused", problem: `cannot be read (${describeFileError(error)})` };
  }
  const decoded = decodePolicyCache(bytes, keyPrefix, options);
  if (!decoded.ok) return { status: "refused", problem: decoded.problem };
  return { status: "ok", ...decoded.value };
}

/**
 * Writes `bytes` to `filePath` atomically: a temporary file in the same directory, fsync, rename
 * over the target, fsync of the directory. The temporary file is removed when any step fails.
 */
export async function writeFileAtomically(filePath: string, bytes: Uint8Array): Promise<void> {
  const directory = path.dirname(filePath);
  const temporary = path.join(
    directory,
    `.${path.basename(filePath)}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`,
  );
  try {
    const file = await open(temporary, "wx", 0o644);
    try {
      await file.writeFile(bytes);
      await file.sync();
    } finally {
      await file.close();
    }
    await rename(temporary, filePath);
  } catch (error: unknown) {
    await unlink(temporary).catch(() => undefined);
    throw error;
  }
  // The rename is durable once the directory is (not every platform lets a directory be synced).
  const dir = await open(directory, "r").catch(() => null);
  if (dir !== null) {
    await dir.sync().catch(() => undefined);
    await dir.close();
  }
}

export interface PolicyCacheWriterOptions {
  readonly path: string;
  readonly keyPrefix: string;
  /** Least time between two saves; the newest policy is always saved in the end. */
  readonly saveIntervalMs: number;
  /** The policy in force as a binary snapshot, and its version; null when none is. */
  readonly snapshot: () => { readonly bytes: Uint8Array; readonly version: number } | null;
  readonly sha256Bytes: Sha256Bytes;
  /** Durations (the save interval). */
  readonly clock: Clock;
  /** The saved-at time written into the file. */
  readonly wallClock: Clock;
  readonly timers: Timers;
  readonly logger: EnforcerLogger;
}

/**
 * Saves the policy in force to the cache file after each version applied: serialised, at most one
 * save every `saveIntervalMs`, always the newest. A failed save is logged once until one succeeds
 * and never stops the enforcer.
 */
export class PolicyCacheWriter {
  readonly #options: PolicyCacheWriterOptions;
  #isDirty = false;
  #running: Promise<void> | null = null;
  #timer: TimerHandle | null = null;
  #lastSaveAtMs = Number.NEGATIVE_INFINITY;
  #isFailing = false;
  #savedVersion: number | null = null;

  constructor(options: PolicyCacheWriterOptions) {
    this.#options = options;
  }

  /** The version last written, or null. */
  get savedVersion(): number | null {
    return this.#savedVersion;
  }

  /** A version was applied: save it (now, or once the interval since the last save is over). */
  noteApplied(): void {
    this.#isDirty = true;
    if (this.#running !== null || this.#timer !== null) return;
    const waitMs = Math.max(
      0,
      this.#lastSaveAtMs + this.#options.saveIntervalMs - this.#options.clock.nowMs(),
    );
    if (waitMs === 0) {
      this.#start();
      return;
    }
    this.#timer = this.#options.timers.setTimer(() => {
      this.#timer = null;
      this.#start();
    }, waitMs);
  }

  /** Saves what is pending now, ignoring the interval, and waits for it (at stop). */
  async flush(): Promise<void> {
    this.#timer?.cancel();
    this.#timer = null;
    await this.#running;
    if (this.#isDirty) {
      this.#start();
      await this.#running;
    }
  }

  #start(): void {
    this.#running = this.#save().finally(() => {
      this.#running = null;
      if (this.#isDirty) this.noteApplied();
    });
  }

  async #save(): Promise<void> {
    const { path: filePath, keyPrefix, logger } = this.#options;
    this.#isDirty = false;
    this.#lastSaveAtMs = this.#options.clock.nowMs();
    const snapshot = this.#options.snapshot();
    if (snapshot === null) return;
    try {
      const bytes = encodePolicyCache(
        snapshot.bytes,
        {
          protocolVersion: REDIS_PROTOCOL_VERSION,
          keyPrefix,
          savedAtMs: this.#options.wallClock.nowMs(),
        },
        this.#options.sha256Bytes,
      );
      await writeFileAtomically(filePath, bytes);
      this.#savedVersion = snapshot.version;
      this.#isFailing = false;
      logger.log("info", "policy saved to the cache on disk", {
        path: filePath,
        version: snapshot.version,
        bytes: bytes.length,
      });
    } catch (error: unknown) {
      if (this.#isFailing) return;
      this.#isFailing = true;
      logger.log("warn", "cannot save the policy to the cache on disk; the enforcer runs on", {
        path: filePath,
        version: snapshot.version,
        error: describeFileError(error),
      });
    }
  }
}
