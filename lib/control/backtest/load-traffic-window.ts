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
  TrafficBatchBuilder,
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

/**
 * The window's columns, filled batch by batch by the recording's one column builder (sized by the
 * rows' request counts; grown if short), and each request's weight (1 / its batch's sample rate),
 * kept as runs and spread into a column once at the end.
 */
class WindowColumns {
  readonly #columns: TrafficBatchBuilder;
  readonly #weightRuns: { readonly end: number; readonly weight: number }[] = [];

  constructor(capacity: number) {
    this.#columns = new TrafficBatchBuilder(capacity);
  }

  get count(): number {
    return this.#columns.count;
  }

  /** Appends the batch's requests within [fromMs, toMs), in the batch's order. */
  append(batch: TrafficBatch, fromMs: number, toMs: number): void {
    if (this.#columns.appendBatch(batch, { fromMs, toMs }) === 0) return;
    this.#weightRuns.push({ end: this.#columns.count, weight: 1 / batch.sampleRate });
  }

  /** The window, and the earliest and latest request times in it (infinite when empty). */
  window(): { window: TrafficWindow; firstRecordedMs: number; lastRecordedMs: number } {
    const columns = this.#columns;
    const n = columns.count;
    const weight = new Float32Array(n);
    let start = 0;
    for (const run of this.#weightRuns) {
      weight.fill(run.weight, start, run.end);
      start = run.end;
    }
    const timeMs = columns.timeMs.subarray(0, n);
    let firstRecordedMs = Number.POSITIVE_INFINITY;
    let lastRecordedMs = Number.NEGATIVE_INFINITY;
    for (let i = 0; i < n; i++) {
      const t = timeMs[i] as number;
      if (t < firstRecordedMs) firstRecordedMs = t;
      if (t > lastRecordedMs) lastRecordedMs = t;
    }
    return {
      window: {
        count: n,
        subjects: columns.subjects,
        profiles: columns.profiles,
        timeMs,
        subject: columns.subject.subarray(0, n),
        profile: columns.profile.subarray(0, n),
        order: columns.order.subarray(0, n),
        flags: columns.flags.subarray(0, n),
        binding: columns.binding.subarray(0, n),
        weight,
      },
      firstRecordedMs,
      lastRecordedMs,
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
  const { window, firstRecordedMs, lastRecordedMs } = columns.window();
  return {
    // In subject order, as the replay walks it.
    window: orderTrafficWindow(window),
    sampleRates: [...sampleRates].sort((a, b) => a - b),
    dropped,
    gaps: gaps.sort((a, b) => a.fromMs - b.fromMs),
    gateways: gateways.size,
    firstRecordedMs: n === 0 ? null : firstRecordedMs,
    lastRecordedMs: n === 0 ? null : lastRecordedMs,
    batchesRead: rows.length,
  };
}
