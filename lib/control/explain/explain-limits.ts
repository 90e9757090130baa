import {
  type LayeredDecision,
  type LimitOutcome,
  StoreUnavailableError,
} from "@limitplane/enforcer/limiter";
import {
  explainTrace,
  type ResolutionTrace,
  type ResolvedCheck,
  resolveLimits,
  ZCustomerId,
} from "@limitplane/enforcer/policy";
import { z } from "zod";
import { parseOptions } from "../change-context";
import type { ExplainDeps } from "../deps";
import { readCompiledSnapshot } from "../policy/get-current-snapshot";

const NAME = /^[a-z0-9][a-z0-9_-]{0,62}$/;

export const ZExplainOptions = z.strictObject({
  /** Absent: an anonymous request, keyed by `clientAddress`. */
  customerId: ZCustomerId.optional(),
  /** Absent: the customer's tier in the registry, else the default tier. */
  tier: z.string().regex(NAME, { error: "tier must be a tier name" }).optional(),
  /** Absent: matched from `method` and `path`, else the default class. */
  endpointClass: z
    .string()
    .regex(NAME, { error: "endpointClass must be an endpoint class name" })
    .optional(),
  method: z
    .string()
    .regex(/^[A-Za-z]{1,20}$/, { error: "method must be an HTTP method such as GET" })
    .optional(),
  path: z
    .string()
    .startsWith("/", { error: "path must start with /" })
    .max(2048, { error: "path must be at most 2048 characters" })
    .optional(),
  clientAddress: z.string().max(100, { error: "clientAddress is too long" }).optional(),
});
export type ExplainOptions = z.input<typeof ZExplainOptions>;

export type { ExplainDeps };

/** One check and, when the store answered, what it would decide now for one more request. */
export interface ExplainedCheck {
  readonly scope: string;
  readonly bucket: string;
  readonly layer: ResolvedCheck["layer"];
  readonly mode: ResolvedCheck["mode"];
  readonly limit: ResolvedCheck["limit"];
  readonly onStoreFailure: ResolvedCheck["onStoreFailure"];
  readonly live: Omit<LimitOutcome, "scope" | "mode"> | null;
}

export interface Explanation {
  readonly policyVersion: number;
  readonly subject: string;
  readonly subjectKind: "customer" | "address";
  /** The tier the registry gives the customer, when it is there. */
  readonly registryTier: string | null;
  readonly tier: string | null;
  readonly endpointClass: string;
  readonly cost: number;
  readonly checks: readonly ExplainedCheck[];
  /** What one more request would get now: null when the store could not be read. */
  readonly decision: Omit<LayeredDecision, "outcomes"> | null;
  /** Why `decision` is null. */
  readonly liveError: string | null;
  readonly trace: ResolutionTrace;
  /** The trace in words, one line each. */
  readonly explanation: readonly string[];
}

/** What one more request would get from a limit now: its outcome without scope and mode. */
export function liveOutcomeOf(outcome: LimitOutcome): Omit<LimitOutcome, "scope" | "mode"> {
  return {
    allowed: outcome.allowed,
    limit: outcome.limit,
    remaining: outcome.remaining,
    retryAfterMs: outcome.retryAfterMs,
    resetAfterMs: outcome.resetAfterMs,
    reason: outcome.reason,
  };
}

export async function explainLimits(
  options: ExplainOptions,
  deps: ExplainDeps,
): Promise<Explanation> {
  const input = parseOptions(ZExplainOptions, options);
  const [snapshot, customer] = await Promise.all([
    readCompiledSnapshot({ customerId: input.customerId ?? null }, deps),
    input.customerId === undefined
      ? null
      : deps.db.customer.findUnique({ where: { id: input.customerId }, select: { tier: true } }),
  ]);
  const nowMs = deps.clock.nowMs();
  const resolution = resolveLimits(
    snapshot,
    {
      customerId: input.customerId ?? null,
      tier: input.tier ?? customer?.tier ?? null,
      endpointClass: input.endpointClass ?? null,
      method: input.method?.toUpperCase() ?? null,
      path: input.path ?? null,
      clientAddress: input.clientAddress ?? null,
    },
    nowMs,
  );
  const trace = resolution.trace;
  if (trace === null) throw new Error("resolveLimits returned no trace");
  let live: LayeredDecision | null = null;
  let liveError: string | null = null;
  try {
    live = await deps.store.peek({
      subject: resolution.subject,
      checks: resolution.checks,
      cost: resolution.cost,
    });
  } catch (error: unknown) {
    if (!(error instanceof StoreUnavailableError)) throw error;
    // The trace stands without the live state: say why it is missing rather than fail.
    liveError = `The live state could not be read from Redis: ${error.message}`;
  }
  const checks = resolution.checks.map((check, index): ExplainedCheck => {
    const outcome = live?.outcomes[index];
    return {
      scope: check.scope,
      bucket: check.bucket,
      layer: check.layer,
      mode: check.mode,
      limit: check.limit,
      onStoreFailure: check.onStoreFailure,
      live: outcome === undefined ? null : liveOutcomeOf(outcome),
    };
  });
  return {
    policyVersion: snapshot.version,
    subject: resolution.subject,
    subjectKind: resolution.subjectKind,
    registryTier: customer?.tier ?? null,
    tier: resolution.tier,
    endpointClass: resolution.endpointClass,
    cost: resolution.cost,
    checks,
    decision:
      live === null
        ? null
        : {
            allowed: live.allowed,
            limit: live.limit,
            remaining: live.remaining,
            retryAfterMs: live.retryAfterMs,
            resetAfterMs: live.resetAfterMs,
            reason: live.reason,
            scope: live.scope,
          },
    liveError,
    trace,
    explanation: explainTrace(trace),
  };
}
