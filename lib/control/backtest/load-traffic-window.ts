/**
 * Reads a span of the traffic record from Postgres into one columnar window (`TrafficWindow`):
 * the batches overlapping the span (a batch holds at most an hour, so its `firstAt` is at most an
 * hour before the span), inflated, decoded and concatenated with one subject and one profile
 * dictionary; requests outside the span are left out. Also what the record says about itself:
 * sample rates, requests dropped by full buffers, and gaps where a stream was trimmed unread.
 */
import { inflateRawSync } from "node:zlib";
import {
  decodeTrafficBatch,
  type TrafficBatch,
  type TrafficProfile,
} from "@limitplane/enforcer/recording";
import type { PrismaClient } from "@/lib/generated/prisma/client";
import type { TrafficWindow } from "./replay-traffic";

const HOUR_MS = 3_600_000;

export interface TrafficRecordGapView {
  readonly gatewayId: string;
  readonly fromMs: number;
  readonly toMs: number;
  readonly reason: "stream-trimmed" | "buffer-full";
  /** Requests lost, when known (a full buffer counts them). */
  readonly requests: number | null;
}

export interface LoadedTrafficWindow {
  readonly window: TrafficWindow;
  readonly sampleRates: readonly number[];
  readonly dropped: number;
  readonly gaps: readonly TrafficRecordGapView[];
  readonly gateways: number;
  readonly firstRecordedMs: number | null;
  readonly lastRecordedMs: number | null;
  readonly batchesRead: number;
}

export async function loadTrafficWindow(
  db: PrismaClient,
  span: { readonly fromMs: number; readonly toMs: number },
): Promise<LoadedTrafficWindow> {
  const rows = await db.trafficBatch.findMany({
    where: {
      firstAt: { gte: new Date(span.fromMs - HOUR_MS), lt: new Date(span.toMs) },
      lastAt: { gte: new Date(span.fromMs - 1) },
    },
    orderBy: { id: "asc" },
    select: {
      gatewayId: true,
      firstAt: true,
      lastAt: true,
      requests: true,
      dropped: true,
      sampleRate: true,
      payload: true,
    },
  });
  const trimmed = await db.trafficRecordGap.findMany({
    where: { toAt: { gte: new Date(span.fromMs) }, fromAt: { lt: new Date(span.toMs) } },
    orderBy: { fromAt: "asc" },
    select: { gatewayId: true, fromAt: true, toAt: true },
  });

  const batches: TrafficBatch[] = [];
  let total = 0;
  let dropped = 0;
  const gaps: TrafficRecordGapView[] = trimmed.map((gap) => ({
    gatewayId: gap.gatewayId,
    fromMs: gap.fromAt.getTime(),
    toMs: gap.toAt.getTime(),
    reason: "stream-trimmed",
    requests: null,
  }));
  const sampleRates = new Set<number>();
  const gateways = new Set<string>();
  for (const row of rows) {
    gateways.add(row.gatewayId);
    if (row.dropped > 0) {
      dropped += row.dropped;
      gaps.push({
        gatewayId: row.gatewayId,
        fromMs: row.firstAt.getTime(),
        toMs: row.lastAt.getTime(),
        reason: "buffer-full",
        requests: row.dropped,
      });
    }
    if (row.requests === 0) continue;
    sampleRates.add(row.sampleRate);
    const batch = decodeTrafficBatch(new Uint8Array(inflateRawSync(row.payload)));
    batches.push(batch);
    total += batch.count;
  }

  const timeMs = new Float64Array(total);
  const subject = new Uint32Array(total);
  const profile = new Uint32Array(total);
  const order = new Uint16Array(total);
  const flags = new Uint8Array(total);
  const binding = new Uint8Array(total);
  const weight = new Float32Array(total);
  const subjects: string[] = [];
  const subjectIndex = new Map<string, number>();
  const profiles: TrafficProfile[] = [];
  const profileIndex = new Map<string, number>();
  let n = 0;
  let firstRecordedMs = Number.POSITIVE_INFINITY;
  let lastRecordedMs = Number.NEGATIVE_INFINITY;
  for (const batch of batches) {
    const subjectMap = new Uint32Array(batch.subjects.length);
    batch.subjects.forEach((name, i) => {
      let id = subjectIndex.get(name);
      if (id === undefined) {
        id = subjects.length;
        subjects.push(name);
        subjectIndex.set(name, id);
      }
      subjectMap[i] = id;
    });
    const profileMap = new Uint32Array(batch.profiles.length);
    batch.profiles.forEach((value, i) => {
      const key = JSON.stringify(value);
      let id = profileIndex.get(key);
      if (id === undefined) {
        id = profiles.length;
        profiles.push(value);
        profileIndex.set(key, id);
      }
      profileMap[i] = id;
    });
    const w = 1 / batch.sampleRate;
    for (let i = 0; i < batch.count; i++) {
      const t = batch.timeMs[i] ?? 0;
      if (t < span.fromMs || t >= span.toMs) continue;
      if (t < firstRecordedMs) firstRecordedMs = t;
      if (t > lastRecordedMs) lastRecordedMs = t;
      timeMs[n] = t;
      subject[n] = subjectMap[batch.subject[i] ?? 0] ?? 0;
      profile[n] = profileMap[batch.profile[i] ?? 0] ?? 0;
      order[n] = batch.order[i] ?? 0;
      flags[n] = batch.flags[i] ?? 0;
      binding[n] = batch.binding[i] ?? 0;
      weight[n] = w;
      n++;
    }
  }
  return {
    window: {
      count: n,
      subjects,
      profiles,
      timeMs: timeMs.subarray(0, n),
      subject: subject.subarray(0, n),
      profile: profile.subarray(0, n),
      order: order.subarray(0, n),
      flags: flags.subarray(0, n),
      binding: binding.subarray(0, n),
      weight: weight.subarray(0, n),
    },
    sampleRates: [...sampleRates].sort((a, b) => a - b),
    dropped,
    gaps: gaps.sort((a, b) => a.fromMs - b.fromMs),
    gateways: gateways.size,
    firstRecordedMs: n === 0 ? null : firstRecordedMs,
    lastRecordedMs: n === 0 ? null : lastRecordedMs,
    batchesRead: rows.length,
  };
}
