import { createHash } from "node:crypto";
import { mkdir, mkdtemp, readdir, readFile, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ManualTimers } from "../limiter/timers";
import { PolicyState } from "../policy/policy-state";
import { REDIS_PROTOCOL_VERSION } from "../publication/protocol";
import { exampleSnapshot } from "../testing/policy-factory";
import type { LogLevel } from "./logger";
import {
  encodePolicyCache,
  PolicyCacheWriter,
  readPolicyCache,
  writeFileAtomically,
} from "./policy-cache";

const sha256Bytes = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest();
const PREFIX = "lp:";
const SAVED_AT_MS = Date.UTC(2026, 11, 6, 0, 40);
let dir: string;

function stateAt(version: number): PolicyState {
  return PolicyState.fromSnapshot(exampleSnapshot(() => {}, { version }));
}

function cacheBytes(
  version: number,
  header: { protocolVersion?: number; keyPrefix?: string } = {},
): Uint8Array {
  return encodePolicyCache(
    stateAt(version).toBinary(),
    {
      protocolVersion: header.protocolVersion ?? REDIS_PROTOCOL_VERSION,
      keyPrefix: header.keyPrefix ?? PREFIX,
      savedAtMs: SAVED_AT_MS,
    },
    sha256Bytes,
  );
}

function read(file: string) {
  return readPolicyCache(file, PREFIX, { sha256Bytes });
}

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "lp-policy-cache-"));
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("the policy cache file", () => {
  it("gives back the policy it was written with: version, checksum, when it was saved", async () => {
    const file = path.join(dir, "good.lpcache");
    const state = stateAt(7);
    await writeFileAtomically(file, cacheBytes(7));
    const loaded = await read(file);
    if (loaded.status !== "ok") throw new Error(`not loaded: ${JSON.stringify(loaded)}`);
    expect(loaded.savedAtMs).toBe(SAVED_AT_MS);
    expect(loaded.state.version).toBe(7);
    expect(loaded.state.checksum).toBe(state.checksum);
    expect(loaded.state.size).toEqual(state.size);
  });

  it("a missing file is no cache, not a refusal", async () => {
    expect(await read(path.join(dir, "absent.lpcache"))).toEqual({ status: "missing" });
  });

  const good = () => cacheBytes(7);
  const flip = (bytes: Uint8Array, at: number) => {
    const copy = bytes.slice();
    copy[at] = (copy[at] ?? 0) ^ 0xff;
    return copy;
  };
  const cases: { name: string; bytes: () => Uint8Array; problem: string | RegExp }[] = [
    {
      name: "truncated inside the header",
      bytes: () => good().subarray(0, 20),
      problem: "truncated: 20 bytes, shorter than the header",
    },
    {
      name: "truncated inside the snapshot",
      bytes: () => good().subarray(0, good().length - 100),
      problem:
        /^its snapshot is refused: snapshot\.length: the header says \d+ bytes, but the value is \d+: truncated$/,
    },
    {
      name: "a byte of the snapshot altered (its SHA-256 fails)",
      bytes: () => flip(good(), good().length - 200),
      problem: /^its snapshot is refused: snapshot\.digest: /,
    },
    {
      name: "the saved-at time altered (the header's SHA-256 fails)",
      bytes: () => flip(good(), 17),
      problem: "the header's SHA-256 does not match: the file was altered or damaged",
    },
    {
      name: "another Redis protocol version",
      bytes: () => cacheBytes(7, { protocolVersion: REDIS_PROTOCOL_VERSION - 1 }),
      problem: `saved under Redis protocol version ${REDIS_PROTOCOL_VERSION - 1}, but this release speaks ${REDIS_PROTOCOL_VERSION}`,
    },
    {
      name: "another file layout",
      bytes: () => {
        const bytes = good().slice();
        new DataView(bytes.buffer).setUint32(4, 9, true);
        return bytes;
      },
      problem: "file layout 9, but this release reads layout 1: written by another release",
    },
    {
      name: "saved for another key prefix",
      bytes: () => cacheBytes(7, { keyPrefix: "other:" }),
      problem: 'saved for key prefix "other:", but this enforcer uses "lp:"',
    },
    {
      name: "not a cache file at all",
      bytes: () => new TextEncoder().encode(`${"{"}"policy": "not this"}`.padEnd(100, " ")),
      problem: 'not a policy cache file (it does not start with "LPPC")',
    },
    {
      name: "empty",
      bytes: () => new Uint8Array(0),
      problem: "truncated: 0 bytes, shorter than the header",
    },
  ];

  it.each(cases)("refuses a file $name, saying so", async ({ name, bytes, problem }) => {
    const file = path.join(dir, `${name.replace(/\W+/g, "-")}.lpcache`);
    await writeFile(file, bytes());
    const loaded = await read(file);
    expect(loaded.status).toBe("refused");
    if (loaded.status !== "refused") return;
    if (typeof problem === "string") expect(loaded.problem).toBe(problem);
    else expect(loaded.problem).toMatch(problem);
  });

  it("refuses a directory where the file should be", async () => {
    const file = path.join(dir, "a-directory.lpcache");
    await mkdir(file);
    expect(await read(file)).toEqual({
      status: "refused",
      problem: "not a regular file (a directory)",
    });
  });

  it("refuses a path that cannot be read (a symbolic link to itself)", async () => {
    const file = path.join(dir, "loop.lpcache");
    await symlink(file, file);
    const loaded = await read(file);
    expect(loaded).toMatchObject({ status: "refused" });
    if (loaded.status === "refused") expect(loaded.problem).toMatch(/^cannot be read \(ELOOP: /);
  });
});

describe("PolicyCacheWriter", () => {
  function writer(file: string, saveIntervalMs: number, version: () => number | null) {
    const timers = new ManualTimers(0);
    const lines: { level: LogLevel; message: string; fields: unknown }[] = [];
    const made = new PolicyCacheWriter({
      path: file,
      keyPrefix: PREFIX,
      saveIntervalMs,
      snapshot: () => {
        const at = version();
        return at === null ? null : { bytes: stateAt(at).toBinary(), version: at };
      },
      sha256Bytes,
      clock: timers,
      wallClock: { nowMs: () => SAVED_AT_MS },
      timers,
      logger: { log: (level, message, fields) => lines.push({ level, message, fields }) },
    });
    return { made, timers, lines };
  }

  it("saves the newest version, at most once per interval, and leaves no temporary file", async () => {
    const file = path.join(dir, "writer.lpcache");
    let version = 1;
    const { made, timers } = writer(file, 5_000, () => version);
    made.noteApplied();
    await made.flush();
    expect(made.savedVersion).toBe(1);
    // Two versions within the interval: one save, of the newer, once the interval is over.
    version = 2;
    made.noteApplied();
    version = 3;
    made.noteApplied();
    timers.advance(4_999);
    await Promise.resolve();
    expect(made.savedVersion).toBe(1);
    timers.advance(1);
    await made.flush();
    expect(made.savedVersion).toBe(3);
    const loaded = await read(file);
    expect(loaded.status === "ok" ? loaded.state.version : loaded).toBe(3);
    expect((await readdir(dir)).filter((name) => name.endsWith(".tmp"))).toEqual([]);
  });

  it("a save that cannot be written is logged once, and the file before it stays whole", async () => {
    const file = path.join(dir, "no-such-directory", "x.lpcache");
    const { made, lines } = writer(file, 0, () => 4);
    made.noteApplied();
    await made.flush();
    made.noteApplied();
    await made.flush();
    expect(made.savedVersion).toBeNull();
    expect(lines.map((line) => [line.level, line.message])).toEqual([
      ["warn", "cannot save the policy to the cache on disk; the enforcer runs on"],
    ]);
    expect(lines[0]?.fields).toMatchObject({ path: file, version: 4 });
    const fields = (lines[0]?.fields ?? {}) as { error?: string };
    expect(String(fields.error)).toMatch(/^ENOENT: /);

    const kept = path.join(dir, "kept.lpcache");
    await writeFileAtomically(kept, cacheBytes(5));
    const before = await readFile(kept);
    await expect(
      writeFileAtomically(path.join(kept, "below-a-file"), cacheBytes(6)),
    ).rejects.toThrow();
    expect(Buffer.compare(await readFile(kept), before)).toBe(0);
  });
});
