/**
 * Reads a span of the traffic record from Postgres into one columnar window (`TrafficWindow`):
 * the batches overlapping the span (a batch holds at most an hour, so its `firstAt` is at most an
 * hour before the span), inflated, decoded and concatenated with one subject and one profile
 * dictionary, then put in subject order (`orderTrafficWindow`, the order the replay walks);
 * requests outside the span are left out. Also what the record says about itself:
 * sample rates, requests dropped by full buffers, and gaps where a stream was trimmed unread.
 */
import { promisify } from "node:util";
import { inflateRaw } from "node:zlib";
import {
  decodeTrafficBatch,
  type TrafficBatch,
  type TrafficProfile,
} from "@limitplane/enforcer/recording";
import type { PrismaClient } from "@/lib/generated/prisma/client";
import { orderTrafficWindow } from "./order-traffic-window";
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

/** Batches read per query: the next page is read from Postgres while this one is decoded. */
const PAGE_ROWS = 24;

const inflate = promisify(inflateRaw);

/** The window's columns, filled batch by batch (sized by the rows' request counts; grown if short). */
class WindowColumns {
  count = 0;
  timeMs: Float64Array;
  subject: Uint32Array;
  profile: Uint32Array;
  order: Uint16Array;
  flags: Uint8Array;
  binding: Uint8Array;
  weight: Float32Array;
  readonly subjects: string[] = [];
  readonly #subjectIndex = new Map<string, number>();
  readonly profiles: TrafficProfile[] = [];
  readonly #profileIndex = new Map<string, number>();
  firstRecordedMs = Number.POSITIVE_INFINITY;
  lastRecordedMs = Number.NEGATIVE_INFINITY;

  constructor(capacity: number) {
    this.timeMs = new Float64Array(capacity);
    this.subject = new Uint32Array(capacity);
    this.profile = new Uint32Array(capacity);
    this.order = new Uint16Array(capacity);
    this.flags = new Uint8Array(capacity);
    this.binding = new Uint8Array(capacity);
    this.weight = new Float32Array(capacity);
  }

  #ensure(more: number): void {
    const needed = this.count + more;
    if (needed <= this.timeMs.length) return;
    const capacity = Math.max(needed, this.timeMs.length * 2);
    const grow = <A extends Float64Array | Uint32Array | Uint16Array | Uint8Array | Float32Array>(
      from: A,
      make: (length: number) => A,
    ): A => {
      const to = make(capacity);
      to.set(from.subarray(0, this.count));
      return to;
    };
    this.timeMs = grow(this.timeMs, (l) => new Float64Array(l));
    this.subject = grow(this.subject, (l) => new Uint32Array(l));
    this.profile = grow(this.profile, (l) => new Uint32Array(l));
    this.order = grow(this.order, (l) => new Uint16Array(l));
    this.flags = grow(this.flags, (l) => new Uint8Array(l));
    this.binding = grow(this.binding, (l) => new Uint8Array(l));
    this.weight = grow(this.weight, (l) => new Float32Array(l));
  }

  /** Appends the batch's requests within [fromMs, toMs), in the batch's order. */
  append(batch: TrafficBatch, fromMs: number, toMs: number): void {
    const subjectMap = new Uint32Array(batch.subjects.length);
    batch.subjects.forEach((name, i) => {
      let id = this.#subjectIndex.get(name);
      if (id === undefined) {
        id = this.subjects.length;
        this.subjects.push(name);
        this.#subjectIndex.set(name, id);
      }
      subjectMap[i] = id;
    });
    const profileMap = new Uint32Array(batch.profiles.length);
    batch.profiles.forEach((value, i) => {
      const key = JSON.stringify(value);
      let id = this.#profileIndex.get(key);
      if (id === undefined) {
        id = this.profiles.length;
        this.profiles.push(value);
        this.#profileIndex.set(key, id);
      }
      profileMap[i] = id;
    });
    const w = 1 / batch.sampleRate;
    const count = batch.count;
    const times = batch.timeMs;
    let minMs = Number.POSITIVE_INFINITY;
    let maxMs = Number.NEGATIVE_INFINITY;
    for (let i = 0; i < count; i++) {
      const t = times[i] as number;
      if (t < minMs) minMs = t;
      if (t > maxMs) maxMs = t;
    }
    this.#ensure(count);
    const at = this.count;
    if (count > 0 && minMs >= fromMs && maxMs < toMs) {
      // The whole batch is in the span: columns copied whole, ids mapped.
      this.timeMs.set(times, at);
      this.order.set(batch.order, at);
      this.flags.set(batch.flags, at);
      this.binding.set(batch.binding, at);
      this.weight.fill(w, at, at + count);
      const subject = this.subject;
      const profile = this.profile;
      const fromSubject = batch.subject;
      const fromProfile = batch.profile;
      for (let i = 0; i < count; i++) {
        subject[at + i] = subjectMap[fromSubject[i] as number] as number;
        profile[at + i] = profileMap[fromProfile[i] as number] as number;
      }
      this.count += count;
      if (minMs < this.firstRecordedMs) this.firstRecordedMs = minMs;
      if (maxMs > this.lastRecordedMs) this.lastRecordedMs = maxMs;
      return;
    }
    let n = at;
    for (let i = 0; i < count; i++) {
      const t = times[i] as number;
      if (t < fromMs || t >= toMs) continue;
      if (t < this.firstRecordedMs) this.firstRecordedMs = t;
      if (t > this.lastRecordedMs) this.lastRecordedMs = t;
      this.timeMs[n] = t;
      this.subject[n] = subjectMap[batch.subject[i] as number] as number;
      this.profile[n] = profileMap[batch.profile[i] as number] as number;
      this.order[n] = batch.order[i] as number;
      this.flags[n] = batch.flags[i] as number;
      this.binding[n] = batch.binding[i] as number;
      this.weight[n] = w;
      n++;
    }
    this.count = n;
  }

  window(): TrafficWindow {
    const n = this.count;
    return {
      count: n,
      subjects: this.subjects,
      profiles: this.profiles,
      timeMs: this.timeMs.subarray(0, n),
      subject: this.subject.subarray(0, n),
      profile: this.profile.subarray(0, n),
      order: this.order.subarray(0, n),
      flags: this.flags.subarray(0, n),
      binding: this.binding.subarray(0, n),
      weight: this.weight.subarray(0, n),
    };
  }
}

export async function loadTrafficWindow(
  db: PrismaClient,
  span: { readonly fromMs: number; readonly toMs: number },
): Promise<LoadedTrafficWindow> {
  // What the record says about itself first (no payloads), then the payloads page by page.
  const rows = await db.trafficBatch.findMany({
    where: {
      firstAt: { gte: new Date(span.fromMs - HOUR_MS), lt: new Date(span.toMs) },
      lastAt: { gte: new Date(span.fromMs - 1) },
    },
    orderBy: { id: "asc" },
    select: {
      id: true,
      gatewayId: true,
      firstAt: true,
      lastAt: true,
      requests: true,
      dropped: true,
      sampleRate: true,
    },
  });
  const trimmed = await db.trafficRecordGap.findMany({
    where: { toAt: { gte: new Date(span.fromMs) }, fromAt: { lt: new Date(span.toMs) } },
    orderBy: { fromAt: "asc" },
    select: { gatewayId: true, fromAt: true, toAt: true },
  });

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
  const withRequests: { readonly id: bigint; readonly requests: number }[] = [];
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
    withRequests.push({ id: row.id, requests: row.requests });
    total += row.requests;
  }

  const columns = new WindowColumns(total);
  const readPage = (from: number) =>
    withRequests.length <= from
      ? Promise.resolve([])
      : db.trafficBatch.findMany({
          where: { id: { in: withRequests.slice(from, from + PAGE_ROWS).map((row) => row.id) } },
          orderBy: { id: "asc" },
          select: { id: true, payload: true },
        });
  let page = readPage(0);
  for (let from = 0; from < withRequests.length; from += PAGE_ROWS) {
    const payloads = await page;
    page = readPage(from + PAGE_ROWS);
    // Awaited on the next turn; a failure before then is not an unhandled rejection.
    page.catch(() => {});
    // Inflated on the thread pool, all of a page at once, each into one chunk (no concatenation:
    // 20 bytes a request and room for the header); decoded here, in order.
    const sizes = new Map(
      withRequests.slice(from, from + PAGE_ROWS).map((row) => [row.id, row.requests]),
    );
    const inflated = await Promise.all(
      payloads.map((row) =>
        inflate(row.payload, { chunkSize: (sizes.get(row.id) ?? 0) * 20 + 65_536 }),
      ),
    );
    for (const bytes of inflated) {
      columns.append(
        decodeTrafficBatch(new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength)),
        span.fromMs,
        span.toMs,
      );
    }
  }
  const n = columns.count;
  return {
    // In subject order, as the replay walks it.
    window: orderTrafficWindow(columns.window()),
    sampleRates: [...sampleRates].sort((a, b) => a - b),
    dropped,
    gaps: gaps.sort((a, b) => a.fromMs - b.fromMs),
    gateways: gateways.size,
    firstRecordedMs: n === 0 ? null : columns.firstRecordedMs,
    lastRecordedMs: n === 0 ? null : columns.lastRecordedMs,
    batchesRead: rows.length,
  };
}
