import { describe, expect, it } from "vitest";
import {
  formatActorKind,
  formatAlgorithm,
  formatClockTime,
  formatCompactNumber,
  formatCountdown,
  formatDurationMs,
  formatFactor,
  formatLimit,
  formatLocalTimestamp,
  formatNumber,
  formatPercent,
  formatRateChange,
  formatRatePerSec,
  formatRelativeTime,
  formatTimeSpan,
  formatTimeTick,
  formatUtcClockTime,
  formatUtcTimestamp,
  formatWindow,
  NO_VALUE,
  timestampLabel,
  toEpochMs,
  toIsoString,
} from "./format";

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

describe("formatNumber", () => {
  it.each([
    [0, "0"],
    [1234.5, "1,234.5"],
    [1_000_000, "1,000,000"],
    [0.125, "0.13"],
    [-0.001, "0"],
    [Number.NaN, NO_VALUE],
    [Number.POSITIVE_INFINITY, NO_VALUE],
  ])("%s reads %s", (value, expected) => {
    expect(formatNumber(value)).toBe(expected);
  });

  it("rounds to the requested fraction digits", () => {
    expect(formatNumber(1.23456, { maximumFractionDigits: 3 })).toBe("1.235");
    expect(formatNumber(1.5, { maximumFractionDigits: 0 })).toBe("2");
  });
});

describe("formatCompactNumber", () => {
  it.each([
    [950, "950"],
    [1234, "1.2k"],
    [999_950, "1M"],
    [3_400_000, "3.4M"],
    [2e9, "2B"],
    [5e12, "5,000B"],
    [-1500, "-1.5k"],
    [Number.NaN, NO_VALUE],
  ])("%s reads %s", (value, expected) => {
    expect(formatCompactNumber(value)).toBe(expected);
  });
});

describe("formatPercent", () => {
  it.each([
    [0, "0%"],
    [1, "100%"],
    [0.0004, "<0.1%"],
    [0.02, "2%"],
    [0.025, "2.5%"],
    [0.4, "40%"],
    [0.996, "99.6%"],
    [0.9996, ">99.9%"],
  ])("%s reads %s", (rate, expected) => {
    expect(formatPercent(rate)).toBe(expected);
  });

  it("says there is no value for no traffic (null), never 0% or NaN%", () => {
    expect(formatPercent(null)).toBe(NO_VALUE);
    expect(formatPercent(Number.NaN)).toBe(NO_VALUE);
  });
});

describe("formatRateChange", () => {
  it.each([
    [0.98, "+98 pts"],
    [-0.05, "−5 pts"],
    [0.004, "+0.4 pts"],
    [0, "0 pts"],
    [Number.NaN, NO_VALUE],
  ])("%s reads %s", (change, expected) => {
    expect(formatRateChange(change)).toBe(expected);
  });
});

describe("formatDurationMs", () => {
  it.each([
    [0, "0 s"],
    [200, "<1 s"],
    [45 * SECOND, "45 s"],
    [59.6 * SECOND, "1 min"],
    [90 * SECOND, "1 min 30 s"],
    [14 * MINUTE, "14 min"],
    [HOUR, "1 h"],
    [59 * MINUTE + 59.7 * SECOND, "1 h"],
    [2 * HOUR + 5 * MINUTE, "2 h 5 min"],
    [2 * HOUR + 5 * MINUTE + 40 * SECOND, "2 h 6 min"],
    [24 * HOUR, "1 d"],
    [DAY + 4 * HOUR, "1 d 4 h"],
    [-14 * MINUTE, "14 min"],
    [Number.NaN, NO_VALUE],
  ])("%s ms reads %s", (durationMs, expected) => {
    expect(formatDurationMs(durationMs)).toBe(expected);
  });
});

describe("formatCountdown", () => {
  it.each([
    [0, "expired"],
    [-5 * SECOND, "expired"],
    [1, "1 s"],
    [999, "1 s"],
    [1001, "2 s"],
    [14 * MINUTE + 32 * SECOND, "14 min 32 s"],
    [15 * MINUTE, "15 min"],
    [2 * HOUR + 5 * MINUTE + 30 * SECOND, "2 h 5 min"],
    [2 * DAY + HOUR, "2 d 1 h"],
    [Number.NaN, NO_VALUE],
  ])("%s ms left reads %s", (remainingMs, expected) => {
    expect(formatCountdown(remainingMs)).toBe(expected);
  });

  it("never promises more time than is left above a minute", () => {
    expect(formatCountdown(HOUR - SECOND)).toBe("59 min 59 s");
    expect(formatCountdown(2 * HOUR - SECOND)).toBe("1 h 59 min");
    expect(formatCountdown(2 * DAY - SECOND)).toBe("1 d 23 h");
  });
});

describe("formatRelativeTime", () => {
  const now = Date.UTC(2025, 2, 4, 10, 0, 0);
  it.each([
    [now, "just now"],
    [now - 30 * SECOND, "just now"],
    [now - 3 * MINUTE, "3 min ago"],
    [now + 3 * MINUTE, "in 3 min"],
    [now - 50 * SECOND, "1 min ago"],
    [now - 2 * HOUR, "2 h ago"],
    [now - 4 * DAY, "4 d ago"],
  ])("%s reads %s", (atMs, expected) => {
    expect(formatRelativeTime(atMs, now)).toBe(expected);
  });

  it("is a missing value for an invalid time", () => {
    expect(formatRelativeTime(Number.NaN, now)).toBe(NO_VALUE);
  });
});

describe("formatRatePerSec", () => {
  it.each([
    [10, "10/s"],
    [1.5, "1.5/s"],
    [0.5, "30/min"],
    [0.01, "36/h"],
    [0.000_01, "0.864/d"],
    [0, "0/s"],
    [-1, NO_VALUE],
    [Number.NaN, NO_VALUE],
  ])("%s per second reads %s", (ratePerSec, expected) => {
    expect(formatRatePerSec(ratePerSec)).toBe(expected);
  });
});

describe("formatLimit", () => {
  it("says a token bucket as a rate and a burst", () => {
    expect(formatLimit({ algorithm: "token-bucket", capacity: 20, refillPerSec: 10 })).toBe(
      "10/s, bursts of 20",
    );
    expect(formatLimit({ algorithm: "leaky-meter", burst: 5, drainPerSec: 0.5 })).toBe(
      "30/min, bursts of 5",
    );
  });

  it("says windows by their length, and whether they roll", () => {
    expect(formatLimit({ algorithm: "fixed-window", limit: 100, windowMs: MINUTE })).toBe(
      "100 per minute",
    );
    expect(formatLimit({ algorithm: "sliding-window", limit: 1000, windowMs: HOUR })).toBe(
      "1,000 per rolling hour",
    );
    expect(formatLimit({ algorithm: "sliding-log", limit: 5, windowMs: 30 * SECOND })).toBe(
      "5 per rolling 30 s",
    );
  });

  it("names windows and algorithms in words", () => {
    expect(formatWindow(DAY)).toBe("day");
    expect(formatWindow(SECOND)).toBe("second");
    expect(formatWindow(5 * MINUTE)).toBe("5 min");
    expect(formatAlgorithm("token-bucket")).toBe("token bucket");
    expect(formatAlgorithm("sliding-window")).toBe("sliding window");
  });
});

describe("formatFactor", () => {
  it("writes a multiplier", () => {
    expect(formatFactor(2)).toBe("×2");
    expect(formatFactor(0.5)).toBe("×0.5");
    expect(formatFactor(Number.NaN)).toBe(NO_VALUE);
  });
});

describe("timestamps", () => {
  const at = Date.UTC(2025, 2, 4, 10, 5, 7, 250);

  it("reads every form a timestamp arrives in, and refuses the rest with null", () => {
    expect(toEpochMs(at)).toBe(at);
    expect(toEpochMs(new Date(at))).toBe(at);
    expect(toEpochMs("2025-03-04T10:05:07.250Z")).toBe(at);
    expect(toEpochMs("not a time")).toBeNull();
    expect(toEpochMs(Number.NaN)).toBeNull();
    expect(toEpochMs(new Date("nope"))).toBeNull();
  });

  it("formats UTC the same everywhere", () => {
    expect(formatUtcTimestamp(at)).toBe("2025-03-04 10:05:07 UTC");
    expect(formatUtcTimestamp(Number.NaN)).toBe(NO_VALUE);
    expect(formatUtcTimestamp(8.64e15 + 1)).toBe(NO_VALUE);
    expect(toIsoString(at)).toBe("2025-03-04T10:05:07.250Z");
    expect(toIsoString(Number.NaN)).toBeNull();
  });

  it("formats in a given time zone and names the zone", () => {
    const text = formatLocalTimestamp(at, { timeZone: "Asia/Tokyo", locale: "en-GB" });
    expect(text).toContain("19:05:07");
    expect(text).toContain("2025");
  });

  it("falls back to UTC for an unknown time zone instead of throwing", () => {
    expect(formatLocalTimestamp(at, { timeZone: "Mars/Olympus_Mons" })).toBe(
      "2025-03-04 10:05:07 UTC",
    );
    expect(formatLocalTimestamp(Number.NaN)).toBe(NO_VALUE);
  });
});

describe("timestampLabel", () => {
  const at = Date.UTC(2025, 2, 4, 10, 5, 7);
  const zone = { timeZone: "America/New_York", locale: "en-US" };

  it("is the same UTC text everywhere until the viewer's clock is known", () => {
    expect(timestampLabel(at, { nowMs: null, relative: true, ...zone })).toEqual({
      text: "2025-03-04 10:05:07 UTC",
      title: "2025-03-04T10:05:07.000Z",
      iso: "2025-03-04T10:05:07.000Z",
    });
  });

  it("is local time with the ISO time on hover", () => {
    const label = timestampLabel(at, { nowMs: at + 3 * DAY, ...zone });
    expect(label.text).toContain("5:05:07");
    expect(label.title).toBe("2025-03-04T10:05:07.000Z");
  });

  it("is relative when asked and recent, with the absolute time on hover", () => {
    const label = timestampLabel(at, { nowMs: at + 3 * MINUTE, relative: true, ...zone });
    expect(label.text).toBe("3 min ago");
    expect(label.title).toContain("5:05:07");
    expect(label.title).toContain("(2025-03-04T10:05:07.000Z)");
    const old = timestampLabel(at, { nowMs: at + 2 * DAY, relative: true, ...zone });
    expect(old.text).toContain("5:05:07");
    const custom = timestampLabel(at, {
      nowMs: at + 2 * DAY,
      relative: true,
      relativeWithinMs: 3 * DAY,
      ...zone,
    });
    expect(custom.text).toBe("2 d ago");
  });

  it("can be short: weekday and time, the full time on hover", () => {
    const label = timestampLabel(at, { nowMs: at, short: true, timeZone: "UTC", locale: "en-GB" });
    expect(label.text).toBe("Tue 10:05");
    expect(label.title).toContain("(2025-03-04T10:05:07.000Z)");
  });

  it("says an invalid time is unknown", () => {
    expect(timestampLabel(Number.NaN, { nowMs: null })).toEqual({
      text: "unknown time",
      title: "unknown time",
      iso: null,
    });
  });
});

describe("time ticks", () => {
  const at = Date.UTC(2025, 2, 4, 14, 5); // a Tuesday
  const utc = { timeZone: "UTC", locale: "en-GB" };

  it("says the time within a day, and the weekday across days", () => {
    expect(formatTimeTick(at, HOUR, utc)).toBe("14:05");
    expect(formatTimeTick(at, DAY, utc)).toBe("Tue 14:05");
    expect(formatTimeTick(at, HOUR, { timeZone: "Asia/Kolkata", locale: "en-GB" })).toBe("19:35");
    expect(formatTimeTick(Number.NaN, HOUR)).toBe(NO_VALUE);
  });

  it("falls back to UTC for an unknown zone", () => {
    expect(formatTimeTick(at, HOUR, { timeZone: "Nowhere/Atlantis" })).toBe("14:05");
  });

  it("gives a bucket's span", () => {
    expect(formatTimeSpan(at, at + MINUTE, utc)).toBe("14:05–14:06");
    expect(formatTimeSpan(at, at + 15 * MINUTE, { ...utc, withWeekday: true })).toBe(
      "Tue 14:05–14:20",
    );
  });
});

describe("formatActorKind", () => {
  it.each([
    ["operator", "console account"],
    ["token", "API token"],
    ["system", "Limitplane itself"],
    ["robot", "robot"],
  ])("%s reads as %s, never as a role", (type, words) => {
    expect(formatActorKind(type)).toBe(words);
    expect(formatActorKind(type)).not.toMatch(/^(viewer|operator|admin)$/);
  });
});

describe("formatClockTime, the console's one clock time", () => {
  const at = Date.UTC(2026, 11, 4, 14, 26, 20);
  it.each([
    ["24-hour with the zone named", {}, "09:26 EST"],
    ["with seconds", { withSeconds: true }, "09:26:20 EST"],
    ["with the weekday", { withWeekday: true }, "Fri, 09:26 EST"],
    ["without the zone, for axis ticks", { withZone: false }, "09:26"],
  ] as const)("%s", (_label, options, expected) => {
    expect(formatClockTime(at, { ...options, timeZone: "America/New_York", locale: "en-US" })).toBe(
      expected,
    );
  });

  it("falls back to the same UTC text a server render shows", () => {
    expect(formatClockTime(at, { timeZone: "Mars/Olympus_Mons" })).toBe("14:26 UTC");
    expect(formatUtcClockTime(at, { withSeconds: true, withWeekday: true })).toBe(
      "Fri 14:26:20 UTC",
    );
    expect(formatClockTime(Number.NaN)).toBe(NO_VALUE);
  });

  it("reads the same clock as the full timestamp: no AM/PM anywhere", () => {
    expect(formatLocalTimestamp(at, { timeZone: "America/New_York", locale: "en-US" })).toBe(
      "Dec 4, 2026, 09:26:20 EST",
    );
  });
});
