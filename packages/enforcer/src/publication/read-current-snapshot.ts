/**
 * The reading side of publication, for enforcers: the current snapshot from Redis, fully
 * validated (shape, references, checksum, and agreement with the hash's own version and
 * checksum), and the announcement messages. Nothing read from Redis is trusted unparsed.
 */
import { z } from "zod";
import type { PolicyFieldError } from "../policy/errors";
import type { TSnapshot } from "../policy/schemas";
import { parseSnapshot } from "../policy/snapshot";
import { policyRedisNames } from "./keys";

export interface ReadingRedis {
  hgetall(key: string): Promise<Record<string, string>>;
}

export type CurrentSnapshotRead =
  /** Nothing has been published under this prefix yet. */
  | { readonly status: "none" }
  /** Something is stored but it must not be applied; keep the last good snapshot and report. */
  | {
      readonly status: "invalid";
      readonly version: number | null;
      readonly errors: readonly PolicyFieldError[];
    }
  | { readonly status: "ok"; readonly snapshot: TSnapshot; readonly publishedAtMs: number };

const ZStoredFields = z.object({
  version: z.string().regex(/^[1-9][0-9]{0,15}$/, { error: "version must be a positive integer" }),
  checksum: z.string().regex(/^[0-9a-f]{64}$/, { error: "checksum must be 64 hex characters" }),
  snapshot: z.string({ error: "snapshot is missing" }),
  publishedAt: z.string().regex(/^[0-9]{1,16}$/, { error: "publishedAt must be milliseconds" }),
});

export async function readCurrentSnapshot(
  redis: ReadingRedis,
  prefix: string,
): Promise<CurrentSnapshotRead> {
  const fields = await redis.hgetall(policyRedisNames(prefix).current);
  if (Object.keys(fields).length === 0) return { status: "none" };
  const stored = ZStoredFields.safeParse(fields);
  if (!stored.success) {
    const version = Number(fields.version);
    return {
      status: "invalid",
      version: Number.isSafeInteger(version) ? version : null,
      errors: stored.error.issues.map((issue) => ({
        path: issue.path.map((segment) => String(segment)),
        message: issue.message,
      })),
    };
  }
  const version = Number(stored.data.version);
  const parsed = parseSnapshot(stored.data.snapshot);
  if (!parsed.ok) return { status: "invalid", version, errors: parsed.errors };
  if (parsed.value.version !== version || parsed.value.checksum !== stored.data.checksum) {
    return {
      status: "invalid",
      version,
      errors: [
        {
          path: ["snapshot"],
          message: `the snapshot (version ${parsed.value.version}) does not match the hash's version ${version} and checksum`,
        },
      ],
    };
  }
  return { status: "ok", snapshot: parsed.value, publishedAtMs: Number(stored.data.publishedAt) };
}

/** An announcement: which version to fetch. */
export interface Announcement {
  readonly version: number;
  readonly checksum: string;
}

const ZAnnouncement = z.strictObject({
  version: z.number().int().min(1).max(Number.MAX_SAFE_INTEGER),
  checksum: z.string().regex(/^[0-9a-f]{64}$/),
});

/** Parses a message from the announce channel; null when it is not a valid announcement. */
export function parseAnnouncement(message: string): Announcement | null {
  let value: unknown;
  try {
    value = JSON.parse(message);
  } catch {
    return null;
  }
  const result = ZAnnouncement.safeParse(value);
  return result.success ? result.data : null;
}
