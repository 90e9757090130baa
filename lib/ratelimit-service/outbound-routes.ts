/**
 * Outbound budgets over HTTP, for callers that are not Node: a long poll that waits for the
 * budget's turn (`acquire`), and the renewal and release of the concurrency slot it hands out.
 * This module parses the request and translates the enforcer's outbound limiter
 * (`createOutboundLimiter`, shared across processes through Redis) into HTTP answers; the limiter
 * decides everything. http-server.ts authenticates, reads the body and wires the client's
 * disconnect to the wait's abort.
 *
 * | Route | Answer |
 * | --- | --- |
 * | `POST /v1/outbound/{budget}/acquire` `{ key?, cost?, maxWaitMs? }` | 200 `{ granted, waitedMs, turnAtMs, slot? }`; 429 past the wait |
 * | `POST /v1/outbound/{budget}/renew` `{ key?, slot }` | 200 `{ slot }`; 410 when the slot lapsed or was freed |
 * | `POST /v1/outbound/{budget}/release` `{ key?, slot }` | 204, also when it was free already |
 */
import {
  OutboundError,
  type OutboundLimiter,
  type OutboundSlot,
} from "@limitplane/enforcer/callers";
import {
  MAX_COST,
  MAX_OUTBOUND_KEY_LENGTH,
  MAX_OUTBOUND_WAIT_MS,
} from "@limitplane/enforcer/policy";
import { z } from "zod";
import { strictBody } from "@/lib/api/strict-body";
import { fieldPath } from "./rls-request";

/** A wait that would end past its maximum: 429, nothing charged. */
export const OUTBOUND_WAIT_EXCEEDED_TYPE = "urn:limitplane:problem:outbound-wait-exceeded";
/** A renewal of a slot that lapsed (not renewed within its TTL) or was freed: 410. */
export const OUTBOUND_SLOT_LOST_TYPE = "urn:limitplane:problem:outbound-slot-lost";

/**
 * The largest body the routes read; a larger one is refused with 413. A key of the longest
 * length, each character escaped as `\uXXXX`, fits with room for the other fields.
 */
export const MAX_OUTBOUND_BODY_BYTES = 4 * 1024;

export const OUTBOUND_ACTIONS = ["acquire", "renew", "release"] as const;
export type OutboundAction = (typeof OUTBOUND_ACTIONS)[number];

/** Paths under this prefix are the outbound routes'. */
export const OUTBOUND_PATH_PREFIX = "/v1/outbound/";

/** An HTTP answer: status, headers and body text (empty for 204). */
export interface OutboundAnswer {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
}

/** The budget and action a path names, or null when it is no outbound route. */
export function outboundRouteOf(
  path: string,
): { readonly budget: string; readonly action: OutboundAction } | null {
  if (!path.startsWith(OUTBOUND_PATH_PREFIX)) return null;
  const [budget, action, ...rest] = path.slice(OUTBOUND_PATH_PREFIX.length).split("/");
  if (budget === undefined || budget === "" || rest.length > 0) return null;
  const known = OUTBOUND_ACTIONS.find((item) => item === action);
  return known === undefined ? null : { budget, action: known };
}

/** The budget's key; its shape for the budget's `keyBy` is the limiter's to check. */
const ZKey = z
  .string({ error: "must be text" })
  .max(MAX_OUTBOUND_KEY_LENGTH, `must be at most ${MAX_OUTBOUND_KEY_LENGTH} characters`)
  .default("");

export const ZAcquireBody = strictBody({
  key: ZKey,
  cost: z
    .number({ error: "must be a number" })
    .int("must be a whole number")
    .min(1, `must be a whole number from 1 to ${MAX_COST}`)
    .max(MAX_COST, `must be a whole number from 1 to ${MAX_COST}`)
    .default(1),
  maxWaitMs: z
    .number({ error: "must be a number" })
    .min(0, "must be a number of ms from 0")
    .max(MAX_OUTBOUND_WAIT_MS, `must be at most ${MAX_OUTBOUND_WAIT_MS} ms`)
    .optional(),
});
export type TAcquireBody = z.infer<typeof ZAcquireBody>;

export const ZSlotBody = strictBody({
  key: ZKey,
  // The id's exact shape is the limiter's to check; this bounds what reaches it.
  slot: z
    .string({ error: "must be the slot id acquire gave" })
    .min(1, "is empty")
    .max(64, "is not a slot id"),
});
export type TSlotBody = z.infer<typeof ZSlotBody>;

export function problemAnswer(
  status: number,
  title: string,
  detail: string,
  extra: { readonly type?: string; readonly headers?: Record<string, string> } & Record<
    string,
    unknown
  > = {},
): OutboundAnswer {
  const { type = "about:blank", headers = {}, ...members } = extra;
  return {
    status,
    headers: { ...headers, "Content-Type": "application/problem+json" },
    body: JSON.stringify({ type, title, status, detail, ...members }),
  };
}

function jsonAnswer(status: number, value: unknown): OutboundAnswer {
  return { status, headers: { "Content-Type": "application/json" }, body: JSON.stringify(value) };
}

/** The body parsed by `schema`, or the 400 naming the field at fault. An empty body is `{}`. */
export function parseOutboundBody<Schema extends z.ZodType>(
  schema: Schema,
  text: string,
):
  | { readonly ok: true; readonly body: z.infer<Schema> }
  | { readonly ok: false; readonly answer: OutboundAnswer } {
  let raw: unknown = {};
  if (text.trim() !== "") {
    try {
      raw = JSON.parse(text);
    } catch {
      return {
        ok: false,
        answer: problemAnswer(400, "Bad request", "body: is not valid JSON", { field: "body" }),
      };
    }
  }
  const parsed = schema.safeParse(raw);
  if (parsed.success) return { ok: true, body: parsed.data };
  const issue = parsed.error.issues[0];
  const field = issue === undefined || issue.path.length === 0 ? "body" : fieldPath(issue.path);
  return {
    ok: false,
    answer: problemAnswer(400, "Bad request", `${field}: ${issue?.message ?? "is invalid"}`, {
      field,
    }),
  };
}

/**
 * The answer to a refusal of the limiter: 404 for an unknown budget, 400 for bad input (its
 * message names the field), 429 past the wait. Anything else is not a refusal and is rethrown.
 */
function refusalAnswer(error: unknown, budget: string, maxWaitMs: number | null): OutboundAnswer {
  if (!(error instanceof OutboundError)) throw error;
  switch (error.code) {
    case "unknown-scope":
      return problemAnswer(
        404,
        "Not found",
        `no outbound budget is named ${JSON.stringify(budget.slice(0, 80))}`,
        { budget: budget.slice(0, 80) },
      );
    case "invalid-argument":
    case "cost-exceeds-limit":
      return problemAnswer(400, "Bad request", error.message, { budget });
    case "max-wait": {
      const retryAfterMs = error.retryAfterMs ?? 1_000;
      return problemAnswer(429, "Outbound wait exceeded", error.message, {
        type: OUTBOUND_WAIT_EXCEEDED_TYPE,
        headers: { "Retry-After": String(Math.max(1, Math.ceil(retryAfterMs / 1000))) },
        budget,
        maxWaitMs,
        retryAfterMs,
      });
    }
    case "aborted":
      throw error;
  }
}

export interface AcquireContext {
  /** Aborts when the client goes away: the wait ends and nothing is charged. */
  readonly signal: AbortSignal;
  /** The server's cap on any wait (`RATELIMIT_SERVICE_OUTBOUND_MAX_WAIT_MS`): a long poll ends. */
  readonly serverMaxWaitMs: number;
}

/**
 * Waits for the budget's turn. Null when the client went away (nothing to answer): during the
 * wait nothing is charged; after the grant the slot is freed at once (the turn, already due, is
 * spent).
 */
export async function acquireAnswer(
  limiter: OutboundLimiter,
  budget: string,
  body: TAcquireBody,
  context: AcquireContext,
): Promise<OutboundAnswer | null> {
  const scope = `outbound:${budget}`;
  let maxWaitMs: number | null = null;
  try {
    const { maxWaitMs: budgetMaxWaitMs } = limiter.budgetOf(scope);
    const wantedMs = body.maxWaitMs ?? budgetMaxWaitMs;
    // A wait longer than the budget allows is the limiter's to refuse (400 naming maxWaitMs);
    // the server's cap only shortens a wait the budget allows.
    maxWaitMs = wantedMs > budgetMaxWaitMs ? wantedMs : Math.min(wantedMs, context.serverMaxWaitMs);
    const permit = await limiter.acquire(scope, {
      key: body.key,
      cost: body.cost,
      maxWaitMs,
      signal: context.signal,
    });
    if (context.signal.aborted) {
      await permit.release();
      return null;
    }
    const slot = permit.detachSlot();
    return jsonAnswer(200, {
      granted: true,
      waitedMs: Math.round(permit.waitedMs),
      turnAtMs: permit.turnAtMs,
      ...(slot === null ? {} : { slot }),
    });
  } catch (error: unknown) {
    if (error instanceof OutboundError && error.code === "aborted") return null;
    return refusalAnswer(error, budget, maxWaitMs);
  }
}

/** Renews a slot: 200 with its TTL, or 410 when it lapsed or was freed (it is not taken back). */
export async function renewAnswer(
  limiter: OutboundLimiter,
  budget: string,
  body: TSlotBody,
): Promise<OutboundAnswer> {
  let slot: OutboundSlot | null;
  try {
    slot = await limiter.renewSlot(`outbound:${budget}`, body.key, body.slot);
  } catch (error: unknown) {
    return refusalAnswer(error, budget, null);
  }
  if (slot !== null) return jsonAnswer(200, { slot });
  return problemAnswer(
    410,
    "Outbound slot lost",
    "the slot lapsed (not renewed within its TTL) or was released; acquire again",
    { type: OUTBOUND_SLOT_LOST_TYPE, budget },
  );
}

/**
 * Frees a slot: 204, also when it was free already (released before, or lapsed), so a retried
 * release is harmless. It never frees another holder's slot.
 */
export async function releaseAnswer(
  limiter: OutboundLimiter,
  budget: string,
  body: TSlotBody,
): Promise<OutboundAnswer> {
  try {
    await limiter.releaseSlot(`outbound:${budget}`, body.key, body.slot);
  } catch (error: unknown) {
    return refusalAnswer(error, budget, null);
  }
  return { status: 204, headers: {}, body: "" };
}
