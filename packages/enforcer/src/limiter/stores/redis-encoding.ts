/**
 * What `RedisStore` sends to its script and reads back (the protocol is described at the top of
 * `redis-decide.lua`): key names, the decision and check arguments, the reply's layout and its
 * decoding, and the bounds the script checks again. Pure functions of their input, no I/O.
 */
import { assertTimeAndCost, assertValidLimit } from "../arguments";
import type { ShapedDecision } from "../leaky-shaper";
import { limitSizeOf } from "../step-limit";
import type {
  LeakyShaperLimit,
  LeaseReturn,
  LeaseWanted,
  LimitCheck,
  LimitMode,
  LimitOutcome,
  LimitSpec,
  RejectReason,
} from "../types";

/**
 * Added to every key's lifetime, in ms. A state is only dropped once it is indistinguishable
 * from no state (window over, bucket full); the margin covers the rounding of that lifetime and
 * a modest clock difference between a primary and the replica that replaces it.
 */
export const EXPIRY_MARGIN_MS = 1_000;
/** With an injected test clock, Redis's expiry clock is unrelated to the state's time. */
export const TEST_CLOCK_EXPIRY_MARGIN_MS = 3_600_000;

/** Reply codes of the script (see `redis-decide.lua`), index = code. */
const REASONS: readonly (RejectReason | null)[] = [
  null,
  "limit-exceeded",
  "cost-exceeds-capacity",
  "queue-full",
];

/**
 * Bytes of the reply per check: the code, then remaining, retryAfterMs and resetAfterMs as
 * doubles (`<Bddd`); a shaper adds delayMs; a lease adds its units and lifetime (`<dd`); a call
 * ends with its time (`<d`). See the script's "Reply".
 */
export const CHECK_BYTES = 25;
export const SHAPE_BYTES = 33;
export const LEASE_BYTES = 16;
export const RETURN_BYTES = 8;
export const TIME_BYTES = 8;

/**
 * The leading argument of a decision at Redis TIME and cost 1, by op and number of checks (up to
 * 16): the same text for nearly every decision, so it is built once.
 */
const HEADS_AT_COST_1: Readonly<Record<"d" | "p" | "s" | "q", readonly string[]>> = {
  d: headsAtCost1("d"),
  p: headsAtCost1("p"),
  s: headsAtCost1("s"),
  q: headsAtCost1("q"),
};

function headsAtCost1(op: string): readonly string[] {
  return Array.from({ length: 17 }, (_, checkCount) => `${op} - 1 ${checkCount}`);
}

/** The ops of the script: decide, peek, shape, peek a shaper, decide leasing, return a lease. */
export type ScriptOp = "d" | "p" | "s" | "q" | "l" | "r";

/**
 * A decision's leading argument: op, time (`nowMs`, the injected clock's reading, or "-" for
 * Redis TIME), cost, number of checks, and for a lease (`tail`) the units and lifetime wanted.
 */
export function headArg(
  op: ScriptOp,
  nowMs: number | undefined,
  cost: number,
  checkCount: number,
  tail = "",
): string {
  if (nowMs === undefined && cost === 1 && op !== "l" && op !== "r") {
    // Production's usual decision: the same text every time, made once.
    const cached = HEADS_AT_COST_1[op][checkCount];
    if (cached !== undefined) return cached;
  }
  // Redis's TIME is always a valid time; only an injected clock's reading needs checking.
  assertTimeAndCost(nowMs ?? 0, cost);
  return `${op} ${nowMs === undefined ? "-" : String(nowMs)} ${String(cost)} ${checkCount}${tail}`;
}

/**
 * The hash that holds a subject's state: `<prefix>rl2:{<subject>}`, e.g. `lp:rl2:{c:acme}`, one
 * field per bucket (`:<bucket>`, the packed state) and `x`, the key's expiry deadline. A sliding
 * log, whose state is a sorted set, has a key of its own: {@link redisLogKey}.
 *
 * The subject is the Redis Cluster hash tag, so every key of one decision lands in one slot and a
 * layered decision is one script call on Cluster too. Inside the tag `%`, `{` and `}` are
 * percent-encoded, so a subject holding braces cannot end the tag early, and the first `}` after
 * the tag's `{` always closes it: that makes keys collision-proof (the subject is read back up to
 * that `}`, and a log's bucket is the rest) whatever either contains. The empty subject is `%`,
 * which no encoded subject can be, so its tag is never empty (an empty tag would hash the whole
 * key).
 */
export function redisSubjectKey(keyPrefix: string, subject: string): string {
  return `${keyPrefix}rl2:{${hashTagOf(subject)}}`;
}

/**
 * A sliding log's key under a subject: `<prefix>rl:{<subject>}:<bucket>`, e.g.
 * `lp:rl:{c:acme}:endpoint:reports`, in the slot of its subject's hash (the same hash tag).
 */
export function redisLogKey(keyPrefix: string, subject: string, bucket: string): string {
  return `${keyPrefix}rl:{${hashTagOf(subject)}}:${bucket}`;
}

/**
 * A key of an outbound budget's subject beside its hash, in the same slot: `<prefix>ob:{<subject>}:<part>`,
 * `t` its last turn, `f` its free turns, `s` its concurrency slots, `x` their counters.
 */
export function redisOutboundKey(
  keyPrefix: string,
  subject: string,
  part: "t" | "f" | "s" | "x",
): string {
  return `${keyPrefix}ob:{${hashTagOf(subject)}}:${part}`;
}

function hashTagOf(subject: string): string {
  if (subject === "") return "%";
  if (!/[%{}]/.test(subject)) return subject;
  return subject.replaceAll("%", "%25").replaceAll("{", "%7B").replaceAll("}", "%7D");
}

/**
 * Appends a decision's checks to its keys and arguments: after the subject's hash
 * (`keys[0]`), the key of each sliding log, and one argument per check.
 */
export function pushChecks(
  keyPrefix: string,
  subject: string,
  checks: readonly LimitCheck[],
  keys: string[],
  args: string[],
): void {
  for (const check of checks) {
    if (check.limit.algorithm === "sliding-log") {
      keys.push(redisLogKey(keyPrefix, subject, check.bucket ?? check.scope));
    }
    args.push(checkArgOf(check));
  }
}

/**
 * The script argument of each limit seen, by identity, as enforced and as dry-run. Limits come
 * from a compiled policy and are reused for every request, so each is checked and turned into
 * text once, not per decision.
 */
const argsByLimit = new WeakMap<LimitSpec | LeakyShaperLimit, { e: string; d: string }>();

/** A check's argument with its bucket, by identity (checks, like limits, come from the policy). */
const argsByCheck = new WeakMap<LimitCheck, string>();

/** The script's argument for one check: algorithm code, two parameters, mode, then bucket. */
function checkArgOf(check: LimitCheck): string {
  let arg = argsByCheck.get(check);
  if (arg === undefined) {
    arg = `${checkArg(check.limit, check.mode)} ${check.bucket ?? check.scope}`;
    argsByCheck.set(check, arg);
  }
  return arg;
}

/** The algorithm code, two parameters and mode of a limit. */
export function checkArg(limit: LimitSpec | LeakyShaperLimit, mode: LimitMode): string {
  let args = argsByLimit.get(limit);
  if (args === undefined) {
    const [code, first, second] = checkedLimitArgs(limit);
    const text = `${code} ${first} ${second}`;
    args = { e: `${text} e`, d: `${text} d` };
    argsByLimit.set(limit, args);
  }
  return mode === "enforce" ? args.e : args.d;
}

/** The algorithm code and two parameters, after the core's checks (once per limit). */
function checkedLimitArgs(limit: LimitSpec | LeakyShaperLimit): [string, string, string] {
  assertValidLimit(limit);
  switch (limit.algorithm) {
    case "fixed-window":
      return ["1", String(limit.limit), String(limit.windowMs)];
    case "sliding-log":
      return ["2", String(limit.limit), String(limit.windowMs)];
    case "sliding-window":
      return ["3", String(limit.limit), String(limit.windowMs)];
    case "token-bucket":
      return ["4", String(limit.capacity), String(limit.refillPerSec)];
    case "leaky-meter":
      return ["5", String(limit.burst), String(limit.drainPerSec)];
    case "leaky-shaper":
      return ["6", String(limit.maxQueue), String(limit.drainPerSec)];
    default: {
      const unknown: never = limit;
      throw new TypeError(`unknown limit algorithm: ${JSON.stringify(unknown)}`);
    }
  }
}

/** A decision's `limit`: the size of the limit, whichever name it has. */
function sizeOf(limit: LimitSpec | LeakyShaperLimit): number {
  return limit.algorithm === "leaky-shaper" ? limit.maxQueue : limitSizeOf(limit);
}

/** The script's reply, checked to be the packed bytes of `length` it must be. */
export function replyBytes(reply: unknown, length: number): Buffer {
  if (!Buffer.isBuffer(reply) || reply.length !== length) {
    const shown = Buffer.isBuffer(reply) ? `${reply.length} bytes` : JSON.stringify(reply);
    throw new TypeError(`unexpected script reply: ${shown}, expected ${length} bytes`);
  }
  return reply;
}

function reasonOf(code: number): RejectReason | null {
  const reason = REASONS[code];
  if (reason === undefined) throw new TypeError(`unknown reply code ${code}`);
  return reason;
}

/** One check's outcome, from its part of the reply at `offset` (`CHECK_BYTES`). */
export function outcomeOf(reply: Buffer, offset: number, check: LimitCheck): LimitOutcome {
  const code = reply.readUInt8(offset);
  return {
    allowed: code === 0,
    limit: sizeOf(check.limit),
    remaining: reply.readDoubleLE(offset + 1),
    retryAfterMs: reply.readDoubleLE(offset + 9),
    resetAfterMs: reply.readDoubleLE(offset + 17),
    reason: reasonOf(code),
    scope: check.scope,
    mode: check.mode,
  };
}

/** A shaper's answer, from its part of the reply at `offset` (`SHAPE_BYTES`). */
export function shapedOf(reply: Buffer, offset: number, limit: LeakyShaperLimit): ShapedDecision {
  const code = reply.readUInt8(offset);
  return {
    allowed: code === 0,
    limit: limit.maxQueue,
    remaining: reply.readDoubleLE(offset + 1),
    retryAfterMs: reply.readDoubleLE(offset + 9),
    resetAfterMs: reply.readDoubleLE(offset + 17),
    reason: reasonOf(code),
    delayMs: reply.readDoubleLE(offset + 25),
  };
}

/** A lease wanted, within the bounds the script checks again (units 1e9, lifetime 1 h). */
export function assertLeaseWanted(lease: LeaseWanted): void {
  if (!(Number.isInteger(lease.units) && lease.units >= 0 && lease.units <= 1e9)) {
    throw new RangeError(`lease.units must be a whole number from 0 to 1e9, got ${lease.units}`);
  }
  if (!(Number.isInteger(lease.lifeMs) && lease.lifeMs >= 0 && lease.lifeMs <= 3_600_000)) {
    throw new RangeError(
      `lease.lifeMs must be a whole number of ms from 0 to 3600000, got ${lease.lifeMs}`,
    );
  }
  const delay = lease.maxDelayMs;
  if (delay !== undefined && !(typeof delay === "number" && delay >= 0 && delay <= 60_000)) {
    throw new RangeError(
      `lease.maxDelayMs must be a number of ms from 0 to 60000, got ${String(delay)}`,
    );
  }
}

/** A lease to give back, within the same bounds, granted at a time the script can read. */
export function assertLeaseReturn(lease: LeaseReturn): void {
  if (!(Number.isInteger(lease.units) && lease.units >= 0 && lease.units <= 1e9)) {
    throw new RangeError(`lease.units must be a whole number from 0 to 1e9, got ${lease.units}`);
  }
  if (!(Number.isFinite(lease.grantedAtMs) && Math.abs(lease.grantedAtMs) <= 2 ** 52)) {
    throw new RangeError(
      `lease.grantedAtMs must be a finite time in ms within 2^52 of 0, got ${lease.grantedAtMs}`,
    );
  }
  assertLeaseWanted({ units: lease.units, lifeMs: lease.lifeMs, maxDelayMs: lease.maxDelayMs });
}
