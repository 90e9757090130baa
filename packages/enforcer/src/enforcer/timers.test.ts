import { describe, expect, it } from "vitest";
import { ManualTimers } from "../limiter/timers";
import { callWithTimeout } from "./timers";

/** A promise the test settles by hand. */
function deferred<T>(): {
  promise: Promise<T>;
  resolve: (value: T) => void;
  reject: (error: unknown) => void;
} {
  let resolve: (value: T) => void = () => {};
  let reject: (error: unknown) => void = () => {};
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

describe("callWithTimeout", () => {
  it("returns the value when the call settles before the timeout, and cancels the timer", async () => {
    const timers = new ManualTimers();
    const call = deferred<string>();
    const result = callWithTimeout(() => call.promise, { timeoutMs: 50, timers, clock: timers });
    timers.advance(20);
    call.resolve("answer");
    await expect(result).resolves.toEqual({ kind: "ok", value: "answer", elapsedMs: 20 });
    expect(timers.pendingCount).toBe(0);
  });

  it("a call that never settles is abandoned at the timeout, not awaited forever", async () => {
    const timers = new ManualTimers();
    const never = new Promise<string>(() => {});
    const result = callWithTimeout(() => never, { timeoutMs: 50, timers, clock: timers });
    timers.advance(49);
    let isSettled = false;
    void result.then(() => {
      isSettled = true;
    });
    await Promise.resolve();
    expect(isSettled).toBe(false);
    timers.advance(1);
    await expect(result).resolves.toEqual({ kind: "timeout", elapsedMs: 50 });
  });

  it("a late rejection after the timeout is swallowed, not reported as unhandled", async () => {
    const timers = new ManualTimers();
    const call = deferred<string>();
    const result = callWithTimeout(() => call.promise, { timeoutMs: 10, timers, clock: timers });
    timers.advance(10);
    await expect(result).resolves.toMatchObject({ kind: "timeout" });
    call.reject(new Error("connection reset"));
    // Vitest fails the run on an unhandled rejection; reaching the next tick is the assertion.
    await new Promise((resolve) => setImmediate(resolve));
  });

  it("a late success after the timeout does not change the result", async () => {
    const timers = new ManualTimers();
    const call = deferred<string>();
    const result = callWithTimeout(() => call.promise, { timeoutMs: 10, timers, clock: timers });
    timers.advance(10);
    call.resolve("too late");
    await expect(result).resolves.toEqual({ kind: "timeout", elapsedMs: 10 });
  });

  it.each([
    ["a rejected promise", () => Promise.reject(new Error("ECONNREFUSED"))],
    [
      "a synchronous throw",
      () => {
        throw new Error("ECONNREFUSED");
      },
    ],
  ])("%s is an error result, never a thrown error", async (_name, call) => {
    const timers = new ManualTimers();
    const result = await callWithTimeout(call, { timeoutMs: 10, timers, clock: timers });
    expect(result.kind).toBe("error");
    expect(result.kind === "error" && result.error instanceof Error).toBe(true);
    expect(timers.pendingCount).toBe(0);
  });

  it("a reply that arrived while the loop was busy wins over a timer that fired late", async () => {
    // A loop turn: the late timer runs first, then the I/O callbacks (the reply), then deferred work.
    const deferredWork: (() => void)[] = [];
    const timers = new ManualTimers();
    const lagging = {
      setTimer: (callback: () => void, delayMs: number) => timers.setTimer(callback, delayMs),
      defer: (callback: () => void) => deferredWork.push(callback),
    };
    const call = deferred<string>();
    const result = callWithTimeout(() => call.promise, {
      timeoutMs: 10,
      timers: lagging,
      clock: timers,
    });
    timers.advance(60);
    call.resolve("answered");
    await Promise.resolve();
    for (const work of deferredWork) work();
    await expect(result).resolves.toMatchObject({ kind: "ok", value: "answered" });
  });

  it("with deferral, a call still unanswered after this turn's I/O times out", async () => {
    const deferredWork: (() => void)[] = [];
    const timers = new ManualTimers();
    const call = deferred<string>();
    const result = callWithTimeout(() => call.promise, {
      timeoutMs: 10,
      timers: {
        setTimer: (callback, delayMs) => timers.setTimer(callback, delayMs),
        defer: (callback) => deferredWork.push(callback),
      },
      clock: timers,
    });
    timers.advance(10);
    for (const work of deferredWork) work();
    call.resolve("too late");
    await expect(result).resolves.toEqual({ kind: "timeout", elapsedMs: 10 });
  });

  it("a callee worth waiting for at the timeout is waited for up to maxWaitMs in all, and no longer", async () => {
    const timers = new ManualTimers();
    let asked = 0;
    const never = new Promise<string>(() => {});
    const result = callWithTimeout(() => never, {
      timeoutMs: 50,
      maxWaitMs: 1_000,
      isWorthWaiting: () => {
        asked++;
        return true;
      },
      timers,
      clock: timers,
    });
    let isSettled = false;
    void result.then(() => {
      isSettled = true;
    });
    timers.advance(999);
    await Promise.resolve();
    expect(isSettled).toBe(false);
    expect(asked).toBe(1);
    timers.advance(1);
    await expect(result).resolves.toEqual({ kind: "timeout", elapsedMs: 1_000 });
    expect(asked).toBe(1);
  });

  it("a slow answer within maxWaitMs is the result", async () => {
    const timers = new ManualTimers();
    const call = deferred<string>();
    const result = callWithTimeout(() => call.promise, {
      timeoutMs: 50,
      maxWaitMs: 1_000,
      isWorthWaiting: () => true,
      timers,
      clock: timers,
    });
    timers.advance(400);
    call.resolve("late but in time");
    await expect(result).resolves.toEqual({
      kind: "ok",
      value: "late but in time",
      elapsedMs: 400,
    });
    expect(timers.pendingCount).toBe(0);
  });

  it("a callee not worth waiting for times out at timeoutMs", async () => {
    const timers = new ManualTimers();
    const result = callWithTimeout(() => new Promise<string>(() => {}), {
      timeoutMs: 50,
      maxWaitMs: 1_000,
      isWorthWaiting: () => false,
      timers,
      clock: timers,
    });
    timers.advance(50);
    await expect(result).resolves.toEqual({ kind: "timeout", elapsedMs: 50 });
  });

  it("a timer that fired past maxWaitMs (a blocked loop) still lets this turn's reply win", async () => {
    const deferredWork: (() => void)[] = [];
    const timers = new ManualTimers();
    const call = deferred<string>();
    const result = callWithTimeout(() => call.promise, {
      timeoutMs: 50,
      maxWaitMs: 100,
      isWorthWaiting: () => true,
      timers: {
        setTimer: (callback, delayMs) => timers.setTimer(callback, delayMs),
        defer: (callback) => deferredWork.push(callback),
      },
      clock: timers,
    });
    timers.advance(50);
    for (const work of deferredWork.splice(0)) work(); // extended to 100 ms
    timers.advance(500); // the loop was blocked well past the wait
    call.resolve("answered meanwhile");
    await Promise.resolve();
    for (const work of deferredWork.splice(0)) work();
    await expect(result).resolves.toMatchObject({ kind: "ok", value: "answered meanwhile" });
  });

  it.each([49, Number.NaN, Number.POSITIVE_INFINITY])(
    "refuses a maxWaitMs of %d after a 50 ms timeout",
    (maxWaitMs) => {
      expect(() => callWithTimeout(() => Promise.resolve(1), { timeoutMs: 50, maxWaitMs })).toThrow(
        RangeError,
      );
    },
  );

  it.each([0, -1, Number.NaN, Number.POSITIVE_INFINITY])("refuses a timeout of %d ms", (ms) => {
    expect(() => callWithTimeout(() => Promise.resolve(1), { timeoutMs: ms })).toThrow(RangeError);
  });
});
