import type { ScopeCountsDeps } from "../dry-run/read-scope-counts";
import { readScopeCounts } from "../dry-run/read-scope-counts";
import type { StagedChangeRecord } from "./staged-change-record";
import { rejectionRate } from "./staged-guard";
import { sideScopes } from "./supervise-staged-changes";

/** One minute of a staged change: each side's requests and rejections. */
export interface StagedMinute {
  readonly minuteStartMs: number;
  readonly sliceRequests: number;
  readonly sliceRejected: number;
  readonly restRequests: number;
  readonly restRejected: number;
}

export interface StagedFigures {
  /** Oldest first, minutes with traffic on either side. */
  readonly minutes: readonly StagedMinute[];
  readonly sliceRate: number;
  readonly restRate: number;
  readonly sliceRequests: number;
  readonly restRequests: number;
  /** False when the live minutes could not be read from Redis. */
  readonly isLive: boolean;
}

const MINUTE_MS = 60_000;

/**
 * The slice against the rest, minute by minute, from the staged change's start until it ended
 * (or now): the slice's requests and rejections under the new limit (`candidate:ID/slice`), the
 * rest's under the rule it targets.
 */
export async function readStagedFigures(
  change: StagedChangeRecord,
  nowMs: number,
  deps: ScopeCountsDeps,
): Promise<StagedFigures> {
  const scopes = sideScopes(change);
  const fromMs = Math.floor(Date.parse(change.createdAt) / MINUTE_MS) * MINUTE_MS;
  const endMs = change.endedAt === null ? nowMs : Date.parse(change.endedAt);
  const { rows, isLive } = await readScopeCounts(
    { scopes: [scopes.slice, scopes.rest], fromMs, toMs: endMs + MINUTE_MS, nowMs },
    deps,
  );
  const byMinute = new Map<number, StagedMinute>();
  for (const row of rows) {
    const minute = byMinute.get(row.minuteStartMs) ?? {
      minuteStartMs: row.minuteStartMs,
      sliceRequests: 0,
      sliceRejected: 0,
      restRequests: 0,
      restRejected: 0,
    };
    const requests = row.allowed + row.rejected;
    byMinute.set(
      row.minuteStartMs,
      row.scope === scopes.slice
        ? {
            ...minute,
            sliceRequests: minute.sliceRequests + requests,
            sliceRejected: minute.sliceRejected + row.rejected,
          }
        : {
            ...minute,
            restRequests: minute.restRequests + requests,
            restRejected: minute.restRejected + row.rejected,
          },
    );
  }
  const minutes = [...byMinute.values()].sort((a, b) => a.minuteStartMs - b.minuteStartMs);
  const sum = (pick: (minute: StagedMinute) => number) =>
    minutes.reduce((total, minute) => total + pick(minute), 0);
  const sliceRequests = sum((minute) => minute.sliceRequests);
  const restRequests = sum((minute) => minute.restRequests);
  return {
    minutes,
    sliceRequests,
    restRequests,
    sliceRate: rejectionRate(
      sum((minute) => minute.sliceRejected),
      sliceRequests,
    ),
    restRate: rejectionRate(
      sum((minute) => minute.restRejected),
      restRequests,
    ),
    isLive,
  };
}
