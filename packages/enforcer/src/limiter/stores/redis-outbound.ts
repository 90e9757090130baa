/**
 * The Redis side of outbound budgets: turns (when a waiting caller may go) and concurrency slots,
 * each ONE call of a function of the store's library (`redis-outbound.lua`, which decides turns
 * with the same `decide` as every other decision). This class builds keys and arguments and
 * reads replies; the waiting itself is the caller's (`enforcer/outbound-limiter.ts`).
 */
import { assertValidLimit } from "../arguments";
import type { LimitSpec } from "../types";
import { REDIS_OUTBOUND_FUNCTIONS } from "./redis-decide-script";
import {
  checkArg,
  EXPIRY_MARGIN_MS,
  redisLogKey,
  redisOutboundKey,
  redisSubjectKey,
} from "./redis-encoding";
import { type RedisScriptClient, RedisScriptRunner } from "./redis-script-runner";

/** The bucket an outbound budget's state has under its subject. */
const OUTBOUND_BUCKET = "outbound";

/** A turn as Redis gave it, in Redis time (ms). */
export type TurnReply =
  | { readonly status: "turn"; readonly waitMs: number; readonly turnAtMs: number }
  | { readonly status: "late"; readonly waitMs: number; readonly turnAtMs: number }
  | { readonly status: "cost"; readonly waitMs: number; readonly turnAtMs: number };

export type SlotReply =
  | { readonly isTaken: true; readonly held: number; readonly expired: number }
  | {
      readonly isTaken: false;
      readonly held: number;
      readonly expiresInMs: number;
      readonly expired: number;
    };

/** A renewal's or a release's outcome, and the expired slots (any holder's) the call freed. */
export interface SlotChange {
  readonly isDone: boolean;
  readonly expired: number;
}

function slotChangeOf(reply: unknown): SlotChange {
  if (!Array.isArray(reply) || reply.length !== 2) throw new TypeError("unexpected slot reply");
  return { isDone: numberOf(reply[0]) === 1, expired: numberOf(reply[1]) };
}

export interface RedisOutboundStoreOptions {
  readonly client: RedisScriptClient;
  /** As `RedisStoreOptions.keyPrefix`. */
  readonly keyPrefix: string;
}

function textOf(value: unknown): string {
  if (Buffer.isBuffer(value)) return value.toString("utf8");
  if (typeof value === "string") return value;
  if (typeof value === "number") return String(value);
  throw new TypeError(`unexpected reply element ${String(value)}`);
}

function numberOf(value: unknown): number {
  const number = Number(textOf(value));
  if (!Number.isFinite(number)) throw new TypeError(`unexpected reply number ${String(value)}`);
  return number;
}

export class RedisOutboundStore {
  readonly #runner: RedisScriptRunner;
  readonly #keyPrefix: string;

  constructor(options: RedisOutboundStoreOptions) {
    if (/[{}]/.test(options.keyPrefix)) {
      throw new RangeError("keyPrefix must not contain { or }");
    }
    this.#runner = new RedisScriptRunner(options.client, "function");
    this.#keyPrefix = options.keyPrefix;
  }

  /**
   * The earliest turn for `cost` on `subject` under `limit`, taken only when it is at most
   * `maxWaitMs` away ("turn"); otherwise nothing is written ("late").
   */
  async takeTurn(
    subject: string,
    limit: LimitSpec,
    cost: number,
    maxWaitMs: number,
  ): Promise<TurnReply> {
    assertValidLimit(limit);
    const keys = [
      redisSubjectKey(this.#keyPrefix, subject),
      redisOutboundKey(this.#keyPrefix, subject, "t"),
      redisOutboundKey(this.#keyPrefix, subject, "f"),
    ];
    if (limit.algorithm === "sliding-log") {
      keys.push(redisLogKey(this.#keyPrefix, subject, OUTBOUND_BUCKET));
    }
    const args = [
      `${checkArg(limit, "enforce")} ${OUTBOUND_BUCKET}`,
      String(cost),
      String(Math.ceil(maxWaitMs)),
      String(EXPIRY_MARGIN_MS),
    ];
    const reply = await this.#runner.runFunction(REDIS_OUTBOUND_FUNCTIONS.turn, keys, args);
    if (!Array.isArray(reply) || reply.length !== 4) {
      throw new TypeError("unexpected reply to a turn");
    }
    const status = textOf(reply[0]);
    if (status !== "turn" && status !== "late" && status !== "cost") {
      throw new TypeError(`unexpected turn status ${status}`);
    }
    return { status, waitMs: numberOf(reply[1]), turnAtMs: numberOf(reply[2]) };
  }

  /** Gives back a turn not yet due, for the next caller; false when it is already due (spent). */
  async giveBackTurn(
    subject: string,
    turnAtMs: number,
    cost: number,
    id: string,
  ): Promise<boolean> {
    const reply = await this.#runner.runFunction(
      REDIS_OUTBOUND_FUNCTIONS.giveBack,
      [redisOutboundKey(this.#keyPrefix, subject, "f")],
      [String(turnAtMs), String(cost), id, String(EXPIRY_MARGIN_MS)],
    );
    return numberOf(reply) === 1;
  }

  /** Takes one of `max` slots for `holder`, expiring `ttlMs` from now unless renewed. */
  async takeSlot(subject: string, max: number, ttlMs: number, holder: string): Promise<SlotReply> {
    const reply = await this.#runner.runFunction(
      REDIS_OUTBOUND_FUNCTIONS.slots,
      this.#slotKeys(subject),
      ["a", String(max), String(ttlMs), holder],
    );
    if (!Array.isArray(reply)) throw new TypeError("unexpected reply to a slot");
    if (numberOf(reply[0]) === 1) {
      return { isTaken: true, held: numberOf(reply[1]), expired: numberOf(reply[2]) };
    }
    return {
      isTaken: false,
      held: numberOf(reply[1]),
      expiresInMs: numberOf(reply[2]),
      expired: numberOf(reply[3]),
    };
  }

  /**
   * Renews `holder`'s slot for `ttlMs`; `isHeld` false when it had expired or was freed (then it
   * stays free). `expired`: slots this call found expired and freed (`redis-outbound.lua`).
   */
  async renewSlot(subject: string, ttlMs: number, holder: string): Promise<SlotChange> {
    return slotChangeOf(
      await this.#runner.runFunction(REDIS_OUTBOUND_FUNCTIONS.slots, this.#slotKeys(subject), [
        "r",
        String(ttlMs),
        holder,
      ]),
    );
  }

  /**
   * Frees `holder`'s slot; `isDone` false when it was already free (released, or expired). As
   * `renewSlot`, `expired` counts the slots this call found expired.
   */
  async freeSlot(subject: string, holder: string): Promise<SlotChange> {
    return slotChangeOf(
      await this.#runner.runFunction(REDIS_OUTBOUND_FUNCTIONS.slots, this.#slotKeys(subject), [
        "f",
        holder,
      ]),
    );
  }

  #slotKeys(subject: string): string[] {
    return [
      redisOutboundKey(this.#keyPrefix, subject, "s"),
      redisOutboundKey(this.#keyPrefix, subject, "x"),
    ];
  }
}
