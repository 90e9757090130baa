/**
 * Readable instants for tests: `atUtc("10:05:15")` is 10:05:15 UTC on a fixed day, in epoch
 * milliseconds, so worked examples read like the seed documents.
 */
export function atUtc(time: string): number {
  const match = /^(\d{2}):(\d{2}):(\d{2})(?:\.(\d{3}))?$/.exec(time);
  if (match === null) throw new RangeError(`expected HH:MM:SS or HH:MM:SS.mmm, got ${time}`);
  const [, hours, minutes, seconds, millis] = match;
  return Date.UTC(
    2026,
    0,
    15,
    Number(hours),
    Number(minutes),
    Number(seconds),
    Number(millis ?? 0),
  );
}

export const SECOND_MS = 1000;
export const MINUTE_MS = 60 * SECOND_MS;
export const DAY_MS = 24 * 60 * MINUTE_MS;
