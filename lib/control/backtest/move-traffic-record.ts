/**
 * The worker's side of the traffic record: moves each gateway's Redis Stream of batches into
 * Postgres (`TrafficBatch`), merged per gateway and hour and deflated, and prunes what is past
 * TRAFFIC_RECORD_RETENTION_HOURS.
 *
 * Exactly once: the rows and the stream cursor (`TrafficStreamCursor`, the last entry id moved)
 * commit in one transaction; only then is the stream trimmed up to the cursor, so a crash
 * between the two re-reads nothing already stored. Entries the stream lost before they were
 * moved (its MAXLEN trimmed them: the worker was down for longer than the stream holds) are
 * recorded as a gap (`TrafficRecordGap`), which backtests report.
 */
import { deflateRawSync } from "node:zlib";
import type { RedisClient } from "@limitplane/enforcer/publication";
import {
  decodeTrafficBatch,
  encodeTrafficBatch,
  mergeTrafficBatches,
  type TrafficBatch,
  trafficRecordNames,
} from "@limitplane/enforcer/recording";
import type { PrismaClient } from "@/lib/generated/prisma/client";
import type { Clock } from "../deps";

const HOUR_MS = 3_600_000;

export interface TrafficRecordMoverDeps {
  readonly db: PrismaClient;
  /** A `control` client. */
  readonly redis: RedisClient;
  /** REDIS_KEY_PREFIX. */
  readonly prefix: string;
  /** The wall clock (the retention's). */
  readonly clock: Clock;
}

export interface MoveTrafficRecordOptions {
  /** TRAFFIC_RECORD_RETENTION_HOURS. */
  readonly retentionHours: number;
  /** Stream entries read per gateway per run. @default 2_000 */
  readonly maxEntriesPerGateway?: number;
}

export interface MoveTrafficRecordResult {
  readonly gateways: number;
  /** Stream entries (gateway batches) read. */
  readonly entriesRead: number;
  readonly requestsMoved: number;
  readonly rowsWritten: number;
  readonly gapsFound: number;
  readonly rowsPruned: number;
  /** Some gateway has more entries waiting. */
  readonly hasMore: boolean;
}

function parseStreamId(id: string): [number, number] {
  const [ms, seq] = id.split("-");
  return [Number(ms ?? 0), Number(seq ?? 0)];
}

function isAfter(a: string, b: string): boolean {
  const [am, as] = parseStreamId(a);
  const [bm, bs] = parseStreamId(b);
  return am > bm || (am === bm && as > bs);
}

/** XINFO STREAM as a map of its fields (null when the stream does not exist). */
async function streamInfo(redis: RedisClient, key: string): Promise<Map<string, unknown> | null> {
  try {
    const reply = (await redis.xinfo("STREAM", key)) as unknown[];
    const info = new Map<string, unknown>();
    for (let i = 0; i + 1 < reply.length; i += 2) info.set(String(reply[i]), reply[i + 1]);
    return info;
  } catch (error: unknown) {
    if (error instanceof Error && /no such key/i.test(error.message)) return null;
    throw error;
  }
}

export async function moveTrafficRecord(
  deps: TrafficRecordMoverDeps,
  options: MoveTrafficRecordOptions,
): Promise<MoveTrafficRecordResult> {
  const names = trafficRecordNames(deps.prefix);
  const maxEntries = options.maxEntriesPerGateway ?? 2_000;
  const gateways = await deps.redis.smembers(names.gateways);
  let entriesRead = 0;
  let requestsMoved = 0;
  let rowsWritten = 0;
  let gapsFound = 0;
  let hasMore = false;
  for (const gatewayId of gateways.sort()) {
    const key = names.stream(gatewayId);
    const info = await streamInfo(deps.redis, key);
    if (info === null) {
      // Expired or never written: forget the gateway (its cursor row stays, harmless).
      await deps.redis.srem(names.gateways, gatewayId);
      continue;
    }
    const cursor = await deps.db.trafficStreamCursor.findUnique({
      where: { gatewayId },
      select: { lastId: true },
    });
    const lastId = cursor?.lastId ?? "0-0";
    const raw = (await deps.redis.xrangeBuffer(
      key,
      cursor === null ? "-" : `(${lastId}`,
      "+",
      "COUNT",
      maxEntries,
    )) as [Buffer, Buffer[]][];
    if (raw.length === 0) continue;
    if (raw.length === maxEntries) hasMore = true;

    // Entries trimmed away unread: the stream deleted ids after the cursor.
    const maxDeleted = String(info.get("max-deleted-entry-id") ?? "0-0");
    const firstId = raw[0]?.[0].toString() ?? lastId;
    const gap =
      cursor !== null && isAfter(maxDeleted, lastId)
        ? { fromMs: parseStreamId(lastId)[0], toMs: parseStreamId(firstId)[0] }
        : null;

    const byHour = new Map<
      number,
      { parts: { batch: TrafficBatch; from: number; to: number }[]; dropped: number }
    >();
    const hourOf = (ms: number) => Math.floor(ms / HOUR_MS) * HOUR_MS;
    const slot = (hour: number) => {
      let entry = byHour.get(hour);
      if (entry === undefined) {
        entry = { parts: [], dropped: 0 };
        byHour.set(hour, entry);
      }
      return entry;
    };
    let newLastId = lastId;
    for (const [idBuffer, fields] of raw) {
      newLastId = idBuffer.toString();
      entriesRead++;
      const payload = fields[1];
      if (fields[0]?.toString() !== "b" || payload === undefined) continue;
      const batch = decodeTrafficBatch(payload);
      slot(hourOf(parseStreamId(newLastId)[0])).dropped += batch.dropped;
      let from = 0;
      while (from < batch.count) {
        const hour = hourOf(batch.timeMs[from] ?? 0);
        let to = from + 1;
        while (to < batch.count && hourOf(batch.timeMs[to] ?? 0) === hour) to++;
        slot(hour).parts.push({ batch, from, to });
        from = to;
      }
      requestsMoved += batch.count;
    }

    const rows = [...byHour.values()].flatMap(({ parts, dropped }) =>
      // Split by sample rate too (a gateway restarted with another rate is another gateway id,
      // but be safe): one row per rate.
      [...new Set(parts.map((part) => part.batch.sampleRate))].map((rate, index) => {
        const ofRate = parts.filter((part) => part.batch.sampleRate === rate);
        const merged = mergeTrafficBatches(ofRate, index === 0 ? dropped : 0);
        let firstMs = Number.POSITIVE_INFINITY;
        let lastMs = Number.NEGATIVE_INFINITY;
        for (let i = 0; i < merged.count; i++) {
          const t = merged.timeMs[i] ?? 0;
          if (t < firstMs) firstMs = t;
          if (t > lastMs) lastMs = t;
        }
        return {
          gatewayId,
          firstAt: new Date(Math.floor(firstMs)),
          lastAt: new Date(Math.ceil(lastMs)),
          requests: merged.count,
          dropped: merged.dropped,
          sampleRate: rate,
          payload: new Uint8Array(deflateRawSync(encodeTrafficBatch(merged), { level: 1 })),
        };
      }),
    );
    // Drops in an hour with no recorded request: a row of none, so the gap is kept.
    for (const [hour, { parts, dropped }] of byHour) {
      if (parts.length === 0 && dropped > 0) {
        rows.push({
          gatewayId,
          firstAt: new Date(hour),
          lastAt: new Date(hour),
          requests: 0,
          dropped,
          sampleRate: 1,
          payload: new Uint8Array(0),
        });
      }
    }

    await deps.db.$transaction(async (tx) => {
      if (rows.length > 0) await tx.trafficBatch.createMany({ data: rows });
      if (gap !== null) {
        await tx.trafficRecordGap.create({
          data: {
            gatewayId,
            fromAt: new Date(gap.fromMs),
            toAt: new Date(gap.toMs),
            reason: "stream-trimmed",
          },
        });
      }
      await tx.trafficStreamCursor.upsert({
        where: { gatewayId },
        create: { gatewayId, lastId: newLastId, updatedAt: new Date(deps.clock.nowMs()) },
        update: { lastId: newLastId, updatedAt: new Date(deps.clock.nowMs()) },
      });
    });
    rowsWritten += rows.length;
    if (gap !== null) gapsFound++;
    // Moved: drop what is older than the cursor (MINID keeps the cursor's own entry).
    await deps.redis.xtrim(key, "MINID", newLastId);
  }

  const rowsPruned = await pruneTrafficRecord(deps, options.retentionHours);
  return {
    gateways: gateways.length,
    entriesRead,
    requestsMoved,
    rowsWritten,
    gapsFound,
    rowsPruned,
    hasMore,
  };
}

/** Deletes batches and gaps that ended before the retention; returns the batches deleted. */
export async function pruneTrafficRecord(
  deps: Pick<TrafficRecordMoverDeps, "db" | "clock">,
  retentionHours: number,
): Promise<number> {
  const cutoff = new Date(deps.clock.nowMs() - retentionHours * HOUR_MS);
  const deleted = await deps.db.trafficBatch.deleteMany({ where: { lastAt: { lt: cutoff } } });
  await deps.db.trafficRecordGap.deleteMany({ where: { toAt: { lt: cutoff } } });
  return deleted.count;
}
