/**
 * The live enforcers and the policy version each runs, from their heartbeats. An enforcer is live
 * while its `enforcer:<id>` hash exists (it expires `heartbeatTtlMs` after the last beat) and its
 * score in `enforcers` is recent; a clean shutdown removes both.
 */
import { z } from "zod";
import { getOpsRedisDeps, type OpsRedisDeps, opsRedisNames } from "./ops-redis";

/** Heartbeats older than this are not counted as live (the enforcer's default TTL is 10 s). */
export const LIVE_HEARTBEAT_MS = 15_000;

export interface LiveEnforcer {
  readonly id: string;
  readonly host: string;
  /** The policy version it has applied; null before its first snapshot. */
  readonly version: number | null;
  readonly heartbeatAtMs: number;
  /** When it applied `version`, epoch ms; null when unknown. */
  readonly appliedAtMs: number | null;
  /** `announce`, `poll` or `start`: how it learnt of the version. */
  readonly appliedVia: string;
}

const ZWholeNumberText = z
  .string()
  .regex(/^\d{1,16}$/)
  .transform(Number);
const ZOptionalNumberText = z.union([z.literal("").transform(() => null), ZWholeNumberText]);

const ZHeartbeat = z.object({
  id: z.string().min(1),
  host: z.string().default(""),
  heartbeatAt: ZWholeNumberText,
  version: ZOptionalNumberText.default(null),
  appliedAt: ZOptionalNumberText.default(null),
  appliedVia: z.string().default(""),
});

/** Every enforcer with a heartbeat within {@link LIVE_HEARTBEAT_MS}, by id. */
export async function readLiveEnforcers(
  nowMs: number = Date.now(),
  deps: OpsRedisDeps = getOpsRedisDeps(),
): Promise<LiveEnforcer[]> {
  const { redis } = deps;
  const names = opsRedisNames(deps);
  const ids = await redis.zrangebyscore(names.enforcers, nowMs - LIVE_HEARTBEAT_MS, "+inf");
  if (ids.length === 0) return [];
  const pipeline = redis.pipeline();
  for (const id of ids) pipeline.hgetall(names.enforcer(id));
  const results = (await pipeline.exec()) ?? [];
  const enforcers: LiveEnforcer[] = [];
  for (const [error, fields] of results) {
    if (error !== null) throw error;
    const parsed = ZHeartbeat.safeParse(fields);
    // An expired hash reads as {}: that enforcer stopped beating.
    if (!parsed.success) continue;
    const beat = parsed.data;
    if (beat.heartbeatAt < nowMs - LIVE_HEARTBEAT_MS) continue;
    enforcers.push({
      id: beat.id,
      host: beat.host,
      version: beat.version,
      heartbeatAtMs: beat.heartbeatAt,
      appliedAtMs: beat.appliedAt,
      appliedVia: beat.appliedVia,
    });
  }
  return enforcers.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}
