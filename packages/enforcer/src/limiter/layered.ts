import { assertTimeAndCost, assertValidChecks } from "./arguments";
import { StepNumbers } from "./decision";
import { wholeUnits } from "./numeric";
import {
  algorithmCodeOf,
  type LimitState,
  limitSizeOf,
  SLIDING_LOG,
  stepLimit,
  stepNumbersInto,
} from "./step-limit";
import type { Decision, LayeredDecision, LimitCheck, LimitMode, LimitOutcome } from "./types";

/**
 * `limit` and `remaining` of a decision that no enforced limit bound (no checks, or only dry-run
 * ones). Infinity would be the honest value, but JSON turns it into `null`, and these decisions
 * cross processes and land in headers and logs; `Number.MAX_SAFE_INTEGER` is a real number that
 * survives JSON, keeps `0 <= remaining <= limit`, and never makes a client slow down. Callers
 * should check `scope === null` and send no rate-limit headers.
 */
export const UNLIMITED = Number.MAX_SAFE_INTEGER;

/** What the layered combiner returns: the decision and, per check, the state to store. */
export interface LayeredStep {
  readonly decision: LayeredDecision;
  /**
   * Aligned with the checks. `undefined` means "nothing to write": the key had no state and the
   * request did not change that. Otherwise the state to store, which may be the input object
   * itself when nothing changed.
   */
  readonly states: readonly (LimitState | undefined)[];
}

/** Which stored state a check reads and writes under the decision's subject. */
export function bucketOf(check: LimitCheck): string {
  return check.bucket ?? check.scope;
}

/** What the binding rule and the combiner read of an outcome; the core's and the enforcer's fit. */
export interface CombinableOutcome {
  readonly allowed: boolean;
  readonly limit: number;
  readonly remaining: number;
  readonly retryAfterMs: number;
  readonly resetAfterMs: number;
  readonly reason: string | null;
  readonly scope: string;
  readonly mode: LimitMode;
}

/** A layered decision over outcomes of type `O` (the core's `LayeredDecision` for `LimitOutcome`). */
export interface CombinedDecision<O extends CombinableOutcome> {
  readonly allowed: boolean;
  readonly limit: number;
  readonly remaining: number;
  readonly retryAfterMs: number;
  readonly resetAfterMs: number;
  readonly reason: O["reason"] | null;
  readonly scope: string | null;
  readonly outcomes: readonly O[];
}

const always = (): boolean => true;

/**
 * The combine kernel: the one place the layered rule is written. Given each check's own answer
 * (`answers[i].allowed`, what that limit alone decides) and its mode (`checks[i].mode`), the
 * request is admitted only if every enforced check admits it, and `writes[i]` says whether the
 * check's stepped state is stored (1) or its stored state is kept untouched (0): on admission
 * every stepped state is stored (enforced checks consume; a dry-run check's stepped state is
 * consuming exactly when it would itself admit); on rejection a check that would have admitted
 * keeps its state, and one that rejected stores its own non-consuming state (a refill written
 * back, expired entries dropped). `decideLayeredInto`, `decideLayeredBinding`,
 * `PreparedChecks.decide` and `decideOne`, and `combineOutcomes` all call it; the Redis script
 * (`redis-decide.lua`) applies the same rule in Lua, where the script needs it atomically.
 * `writes` may be null when nothing is stored.
 */
export function combineAnswers(
  length: number,
  answers: ArrayLike<{ readonly allowed: boolean }>,
  checks: ArrayLike<{ readonly mode: LimitMode }>,
  writes: number[] | null,
): boolean {
  let isAllowed = true;
  for (let index = 0; index < length; index++) {
    if (!(answers[index] as { allowed: boolean }).allowed) {
      if ((checks[index] as { mode: LimitMode }).mode === "enforce") isAllowed = false;
    }
  }
  if (writes !== null) {
    for (let index = 0; index < length; index++) {
      writes[index] = isAllowed || !(answers[index] as { allowed: boolean }).allowed ? 1 : 0;
    }
  }
  return isAllowed;
}

/**
 * The binding outcome. On admission: the enforced limit with the least remaining, the one a
 * client's headers should show so it slows down before anything rejects it. On rejection: a
 * `cost-exceeds-capacity` rejection first (retrying can never help, so its `retryAfterMs` of 0
 * must not be hidden behind a finite wait), otherwise the rejecting limit with the largest
 * `retryAfterMs`, the earliest instant every rejecting limit would admit. Ties go to the check
 * listed first. Outcomes for which `isMeasured` is false are skipped (the enforcer's fail-open
 * outcomes, which measured nothing).
 */
export function bindingOutcome<O extends CombinableOutcome>(
  outcomes: readonly O[],
  isAllowed: boolean,
  isMeasured: (outcome: O) => boolean = always,
): O | undefined {
  let binding: O | undefined;
  for (const outcome of outcomes) {
    if (outcome.mode !== "enforce" || !isMeasured(outcome)) continue;
    if (isAllowed) {
      if (binding === undefined || outcome.remaining < binding.remaining) binding = outcome;
    } else if (!outcome.allowed) {
      if (outcome.reason === "cost-exceeds-capacity") return outcome;
      if (binding === undefined || outcome.retryAfterMs > binding.retryAfterMs) binding = outcome;
    }
  }
  return binding;
}

function toOutcome(check: LimitCheck, decision: Decision): LimitOutcome {
  return {
    allowed: decision.allowed,
    limit: decision.limit,
    remaining: decision.remaining,
    retryAfterMs: decision.retryAfterMs,
    resetAfterMs: decision.resetAfterMs,
    reason: decision.reason,
    scope: check.scope,
    mode: check.mode,
  };
}

/**
 * Combine several limits into one decision for one request. Pure: `states[i]` is the stored state
 * of `checks[i]` (undefined for a new key), and the result says what to store.
 *
 * - Every check is evaluated, and each outcome is what that limit alone decides for this request.
 * - The request is admitted only if every enforced check admits it.
 * - A rejection consumes from none: checks that would have admitted keep their state untouched,
 *   and a check that rejected returns its own non-consuming state (a token bucket's refill
 *   written back, expired log entries dropped), which is not consumption.
 * - Dry-run checks are evaluated and reported, never reject and never block the others. A dry-run
 *   check consumes from its own state only when the request is actually admitted and it would
 *   itself admit, so its state evolves as if it were enforced on the traffic that really got
 *   through: "would block Y" then means the same thing as "blocked X" would under enforcement.
 * - With no enforced check the request is admitted with `scope: null` and `UNLIMITED`.
 *
 * Throws when two checks share a bucket, a check is malformed (a mode other than "enforce" or
 * "dry-run", a limit outside the limiter's bounds: `arguments.ts`, checked once per list of
 * checks), the states do not line up with the checks, or the time or cost is not a finite number
 * (cost >= 0), even with no checks to evaluate.
 */
export function decideLayered(
  states: readonly (LimitState | undefined)[],
  checks: readonly LimitCheck[],
  nowMs: number,
  cost: number,
): LayeredStep {
  const next = new Array<LimitState | undefined>(checks.length);
  return { decision: decideLayeredInto(states, checks, nowMs, cost, next), states: next };
}

/**
 * `decideLayered` for stores on a hot path: the same decision, with the states to store written
 * into `next` (same length as `checks`, not `states` itself) instead of a new array, so a store
 * can reuse one scratch array across decisions. Writes nothing else.
 */
export function decideLayeredInto(
  states: readonly (LimitState | undefined)[],
  checks: readonly LimitCheck[],
  nowMs: number,
  cost: number,
  next: (LimitState | undefined)[],
): LayeredDecision {
  assertTimeAndCost(nowMs, cost);
  assertValidChecks(checks);
  if (states.length !== checks.length || next.length !== checks.length || next === states) {
    throw new RangeError(
      `got ${states.length} states and ${next.length} slots for ${checks.length} checks`,
    );
  }

  const length = checks.length;
  const outcomes = new Array<LimitOutcome>(length);
  for (let index = 0; index < length; index++) {
    const check = checks[index] as LimitCheck;
    const step = stepLimit(states[index], check.limit, nowMs, cost);
    outcomes[index] = toOutcome(check, step.decision);
    next[index] = step.state;
  }
  const writes = writesFor(length);
  const isAllowed = combineAnswers(length, outcomes, checks, writes);
  keepUnwritten(states, next, writes, length);
  return layeredDecisionOf(outcomes, isAllowed);
}

/** One write-flag array per list length, shared: decisions never nest. */
const writesByLength: number[][] = [];

function writesFor(length: number): number[] {
  let writes = writesByLength[length];
  if (writes === undefined) {
    writes = new Array<number>(length).fill(0);
    writesByLength[length] = writes;
  }
  return writes;
}

/** Puts back the stored state of every check the kernel said not to write. */
function keepUnwritten(
  states: readonly (LimitState | undefined)[],
  next: (LimitState | undefined)[],
  writes: readonly number[],
  length: number,
): void {
  for (let index = 0; index < length; index++) {
    if (writes[index] === 0) next[index] = states[index];
  }
}

/** One check's outcome in a {@link LayeredScratch}: rewritten by every decision, never kept. */
interface ScratchOutcome {
  allowed: boolean;
  limit: number;
  remaining: number;
  retryAfterMs: number;
  resetAfterMs: number;
  reason: LimitOutcome["reason"];
  scope: string;
  mode: LimitMode;
  /** The check's index in its list. */
  readonly index: number;
}

/**
 * Reusable space for {@link decideLayeredBinding}: per-check outcomes and the admission of the
 * last decision, allocated once per list length rather than once per decision. One scratch serves
 * one caller at a time.
 */
export class LayeredScratch {
  /** Whether the last decision admitted its request. */
  isAllowed = true;
  readonly #byLength: ScratchOutcome[][] = [];

  /** The outcomes for a list of `length` checks (exactly that long). */
  outcomesFor(length: number): ScratchOutcome[] {
    let outcomes = this.#byLength[length];
    if (outcomes === undefined) {
      outcomes = Array.from({ length }, (_, index) => ({
        allowed: true,
        limit: 0,
        remaining: 0,
        retryAfterMs: 0,
        resetAfterMs: 0,
        reason: null,
        scope: "",
        mode: "enforce" as LimitMode,
        index,
      }));
      this.#byLength[length] = outcomes;
    }
    return outcomes;
  }
}

/**
 * `decideLayeredInto` for replays that read only whether a request was admitted and which check
 * bound it: the same steps, the same states written into `next`, the same binding rule
 * (`bindingOutcome`), but no decision object and no outcome objects (they live in `scratch`).
 * Returns the index of the binding check, -1 when no enforced limit bound; `scratch.isAllowed`
 * is the admission. Throws exactly when `decideLayeredInto` does.
 */
export function decideLayeredBinding(
  states: readonly (LimitState | undefined)[],
  checks: readonly LimitCheck[],
  nowMs: number,
  cost: number,
  next: (LimitState | undefined)[],
  scratch: LayeredScratch,
): number {
  assertTimeAndCost(nowMs, cost);
  assertValidChecks(checks);
  const n = checks.length;
  if (states.length !== n || next.length !== n || next === states) {
    throw new RangeError(`got ${states.length} states and ${next.length} slots for ${n} checks`);
  }
  const outcomes = scratch.outcomesFor(n);
  for (let index = 0; index < n; index++) {
    const check = checks[index] as LimitCheck;
    const step = stepLimit(states[index], check.limit, nowMs, cost);
    const decision = step.decision;
    const outcome = outcomes[index] as ScratchOutcome;
    outcome.allowed = decision.allowed;
    outcome.limit = decision.limit;
    outcome.remaining = decision.remaining;
    outcome.retryAfterMs = decision.retryAfterMs;
    outcome.resetAfterMs = decision.resetAfterMs;
    outcome.reason = decision.reason;
    outcome.scope = check.scope;
    outcome.mode = check.mode;
    next[index] = step.state;
  }
  const writes = writesFor(n);
  const isAllowed = combineAnswers(n, outcomes, outcomes, writes);
  keepUnwritten(states, next, writes, n);
  scratch.isAllowed = isAllowed;
  return bindingOutcome(outcomes, isAllowed)?.index ?? -1;
}

function layeredDecisionOf<O extends CombinableOutcome>(
  outcomes: readonly O[],
  isAllowed: boolean,
  isMeasured: (outcome: O) => boolean = always,
): CombinedDecision<O> {
  const binding = bindingOutcome(outcomes, isAllowed, isMeasured);
  if (binding === undefined) {
    return {
      allowed: isAllowed,
      limit: UNLIMITED,
      remaining: UNLIMITED,
      retryAfterMs: 0,
      resetAfterMs: 0,
      reason: null,
      scope: null,
      outcomes,
    };
  }
  return {
    allowed: isAllowed,
    limit: binding.limit,
    remaining: binding.remaining,
    retryAfterMs: binding.retryAfterMs,
    resetAfterMs: binding.resetAfterMs,
    reason: binding.reason,
    scope: binding.scope,
    outcomes,
  };
}

/**
 * The layered decision for outcomes evaluated elsewhere, in check order: admitted only if every
 * enforced outcome admits, and the top level chosen exactly as `decideLayered` chooses it. The
 * one implementation of the combination rule: the Redis store's script results, the enforcer's
 * local stage and its failure policy all combine through it. `isMeasured` leaves outcomes that
 * measured nothing out of the choice of binding limit; with none left, the decision is unbound
 * (`scope: null`, `UNLIMITED`).
 */
export function combineOutcomes<O extends CombinableOutcome>(
  outcomes: readonly O[],
  isMeasured?: (outcome: O) => boolean,
): CombinedDecision<O> {
  const isAllowed = combineAnswers(outcomes.length, outcomes, outcomes, null);
  return layeredDecisionOf(outcomes, isAllowed, isMeasured);
}

/** The layered decision a request of `cost` would get now; computes, writes nothing. */
export function peekLayered(
  states: readonly (LimitState | undefined)[],
  checks: readonly LimitCheck[],
  nowMs: number,
  cost = 1,
): LayeredDecision {
  return decideLayeredInto(states, checks, nowMs, cost, new Array(checks.length));
}

/**
 * A list of checks validated once and laid out for a store that keeps numbers: each check's
 * bucket, algorithm code, size and mode, and the working space of its `decide`. Made by
 * {@link prepareChecks}, which remembers it per list, so that a store deciding against the same
 * list (a policy's compiled checks) validates and reads nothing of it per decision.
 *
 * The working space is rewritten by every decision: a store fills `hasState` and `numbers` (three
 * per check, in each algorithm's order; see `stepNumbersInto`) with what it holds, calls
 * `decide`, then stores `numbers` for every check whose `writes` is 1. Decisions never
 * nest, so one space per list serves every store. It is made of plain arrays, not typed ones, so
 * that a list prepared for one decision only (the enforcer's degraded path builds one per
 * request) costs little to make.
 */
export class PreparedChecks {
  readonly checks: readonly LimitCheck[];
  readonly length: number;
  /** Per check, the bucket its state lives in under the decision's subject. */
  readonly buckets: readonly string[];
  /** Per check, its algorithm's code (`step-limit.ts`). */
  readonly codes: readonly number[];
  /** Every check has a kernel (no sliding log), so `decide` applies. */
  readonly isNumeric: boolean;
  /** Per check, 1 when the store holds a state of the check's algorithm. */
  readonly hasState: number[];
  /** Per check, three numbers: the stored state in, the state to store out. */
  readonly numbers: number[];
  /** Per check, set by `decide`: 1 when `numbers` must be stored. */
  readonly writes: number[];
  readonly #sizes: readonly number[];
  readonly #steps: StepNumbers[];
  /**
   * The last rejection returned for this list, and whether it is the shared frozen copy: a
   * rejection that repeats the one before it (a client retrying within the same millisecond) is
   * answered with one frozen object instead of a new one each time.
   */
  #rejection: LayeredDecision | undefined;
  #isRejectionShared = false;

  constructor(checks: readonly LimitCheck[]) {
    const length = checks.length;
    this.checks = checks;
    this.length = length;
    this.buckets = checks.map(bucketOf);
    this.codes = checks.map((check) => algorithmCodeOf(check.limit));
    this.isNumeric = this.codes.every((code) => code !== SLIDING_LOG);
    this.hasState = new Array<number>(length).fill(0);
    this.numbers = new Array<number>(length * 3).fill(0);
    this.writes = new Array<number>(length).fill(0);
    this.#sizes = checks.map((check) => limitSizeOf(check.limit));
    this.#steps = Array.from(checks, () => new StepNumbers());
  }

  /**
   * The layered decision for the numbers in the working space, exactly as `decideLayeredInto`
   * makes it (same kernels, same combination, same states written). `numbers` then holds the
   * states to store and `writes` says which to store. Throws on a time or cost out of bounds.
   */
  decide(nowMs: number, cost: number): LayeredDecision {
    assertTimeAndCost(nowMs, cost);
    const { checks, length, codes, hasState, numbers, writes } = this;
    const steps = this.#steps;
    for (let index = 0; index < length; index++) {
      const check = checks[index] as LimitCheck;
      const step = steps[index] as StepNumbers;
      const at = index * 3;
      stepNumbersInto(
        codes[index] as number,
        hasState[index] === 1,
        numbers[at] as number,
        numbers[at + 1] as number,
        numbers[at + 2] as number,
        check.limit,
        nowMs,
        cost,
        step,
      );
      numbers[at] = step.first;
      numbers[at + 1] = step.second;
      numbers[at + 2] = step.third;
    }
    if (combineAnswers(length, steps, checks, writes)) {
      this.#rejection = undefined;
      return this.#decision(true);
    }
    return this.#rejectionDecision();
  }

  /**
   * `decide` for a list of exactly one check, without the working space: its stored state is
   * given as arguments, and the state to store is left in {@link onlyStep} (`first`, `second`,
   * `third`). With one check that state is always stored: an admission consumes, and a
   * rejection is the check's own, whose non-consuming state is written back.
   */
  decideOne(
    hasState: boolean,
    first: number,
    second: number,
    third: number,
    nowMs: number,
    cost: number,
  ): LayeredDecision {
    assertTimeAndCost(nowMs, cost);
    const check = this.checks[0] as LimitCheck;
    const step = this.onlyStep;
    stepNumbersInto(
      this.codes[0] as number,
      hasState,
      first,
      second,
      third,
      check.limit,
      nowMs,
      cost,
      step,
    );
    // One check: its state is always stored (see above), so no write flags are asked for.
    if (combineAnswers(1, this.#steps, this.checks, null)) {
      this.#rejection = undefined;
      return this.#decision(true);
    }
    return this.#rejectionDecision();
  }

  /** The step of the first check: after `decideOne`, the state to store. */
  get onlyStep(): StepNumbers {
    return this.#steps[0] as StepNumbers;
  }

  /** The layered decision of the steps just taken, as `layeredDecisionOf` makes it. */
  #decision(isAllowed: boolean): LayeredDecision {
    const length = this.length;
    if (length !== 1) {
      const outcomes = new Array<LimitOutcome>(length);
      for (let index = 0; index < length; index++) outcomes[index] = this.#outcomeAt(index);
      return layeredDecisionOf(outcomes, isAllowed);
    }
    // One check: it binds exactly when it is enforced (a rejection then is its own).
    const outcome = this.#outcomeAt(0);
    const outcomes = [outcome];
    if (outcome.mode !== "enforce") return layeredDecisionOf(outcomes, isAllowed);
    return {
      allowed: isAllowed,
      limit: outcome.limit,
      remaining: outcome.remaining,
      retryAfterMs: outcome.retryAfterMs,
      resetAfterMs: outcome.resetAfterMs,
      reason: outcome.reason,
      scope: outcome.scope,
      outcomes,
    };
  }

  #outcomeAt(index: number): LimitOutcome {
    const check = this.checks[index] as LimitCheck;
    const step = this.#steps[index] as StepNumbers;
    const size = this.#sizes[index] as number;
    return {
      allowed: step.allowed,
      limit: size,
      remaining: wholeUnits(step.available, size),
      retryAfterMs: step.retryAfterMs,
      resetAfterMs: step.resetAfterMs,
      reason: step.reason,
      scope: check.scope,
      mode: check.mode,
    };
  }

  /** A rejection: the shared frozen one when it repeats the last, else a new one. */
  #rejectionDecision(): LayeredDecision {
    const last = this.#rejection;
    if (last !== undefined && this.#repeats(last)) {
      if (this.#isRejectionShared) return last;
      const shared = freezeDecision(this.#decision(false));
      this.#rejection = shared;
      this.#isRejectionShared = true;
      return shared;
    }
    const fresh = this.#decision(false);
    this.#rejection = fresh;
    this.#isRejectionShared = false;
    return fresh;
  }

  /** Whether the steps just taken give exactly the outcomes of `decision`. */
  #repeats(decision: LayeredDecision): boolean {
    const outcomes = decision.outcomes;
    const steps = this.#steps;
    const sizes = this.#sizes;
    for (let index = 0; index < this.length; index++) {
      const outcome = outcomes[index] as LimitOutcome;
      const step = steps[index] as StepNumbers;
      if (
        outcome.allowed !== step.allowed ||
        outcome.reason !== step.reason ||
        outcome.retryAfterMs !== step.retryAfterMs ||
        outcome.resetAfterMs !== step.resetAfterMs ||
        outcome.remaining !== wholeUnits(step.available, sizes[index] as number)
      ) {
        return false;
      }
    }
    return true;
  }
}

function freezeDecision(decision: LayeredDecision): LayeredDecision {
  for (const outcome of decision.outcomes) Object.freeze(outcome);
  Object.freeze(decision.outcomes);
  return Object.freeze(decision);
}

const NO_CHECKS = new PreparedChecks([]);
const preparedByList = new WeakMap<object, PreparedChecks>();
/** The list prepared last: a gateway deciding against one list over and over pays a comparison. */
let lastPrepared = NO_CHECKS;

/**
 * `checks` validated (as `decideLayered` validates them, throwing the same errors) and prepared,
 * once per list. A different list holding the same check objects in the same order as the last
 * one prepared shares its preparation (a caller that builds `[check]` per request pays a few
 * comparisons, not a validation). Treat prepared lists and their checks as immutable, as every
 * validated list.
 */
export function prepareChecks(checks: readonly LimitCheck[]): PreparedChecks {
  const last = lastPrepared;
  if (checks === last.checks) return last;
  return prepareOther(checks, last);
}

function prepareOther(checks: readonly LimitCheck[], last: PreparedChecks): PreparedChecks {
  // The same checks as the last list first: a comparison per check, no lookup.
  if (Array.isArray(checks) && hasSameChecks(checks, last.checks)) return last;
  let prepared = preparedByList.get(checks);
  if (prepared === undefined) {
    assertValidChecks(checks);
    prepared = new PreparedChecks(checks);
    preparedByList.set(checks, prepared);
  }
  lastPrepared = prepared;
  return prepared;
}

function hasSameChecks(a: readonly LimitCheck[], b: readonly LimitCheck[]): boolean {
  if (a.length !== b.length) return false;
  for (let index = 0; index < a.length; index++) {
    if (a[index] !== b[index]) return false;
  }
  return true;
}
