/**
 * Explain for the rate-limit service: given a domain and the descriptors Envoy would send, which
 * descriptor rule decides each (the service's own matching, `ruleDescriptors`: most specific
 * level first, wildcards, `replaces`, raises in force), with what limit, and what one more call
 * would get now from the rule's counter in the shared store. A descriptor no rule takes goes
 * through the domain's descriptor mapping, as the service sends it, and is explained as the
 * request the mapping makes of it. Nothing is consumed.
 */
import {
  type LimitOutcome,
  type LimitSpec,
  StoreUnavailableError,
} from "@limitplane/enforcer/limiter";
import {
  type DescriptorRuling,
  denyOutcomeOf,
  descriptorCheckOf,
  descriptorRuleScope,
  formatDescriptorPattern,
  MAX_COST,
  prepareSnapshot,
  ruleDescriptors,
  type TDescriptorRule,
  ZDescriptorValueEntry,
} from "@limitplane/enforcer/policy";
import { z } from "zod";
import { requestOfDescriptor } from "../../ratelimit-service/descriptor-mapping";
import { parseOptions } from "../change-context";
import type { ExplainDeps } from "../deps";
import { AppError } from "../errors";
import { formatLimit } from "../format-words";
import { readCompiledSnapshot } from "../policy/get-current-snapshot";
import { explainLimits, liveOutcomeOf } from "./explain-limits";

/** As the service accepts them (`rls-request.ts`): 1 to 64 descriptors of 1 to 32 entries. */
const MAX_DESCRIPTORS = 64;
const MAX_ENTRIES = 32;

export const ZExplainDescriptorsOptions = z.strictObject({
  domain: z
    .string({ error: "domain is required" })
    .min(1, { error: "domain is required" })
    .max(128, { error: "domain takes at most 128 characters" }),
  /** The call's descriptors in order, each its entries level by level, as Envoy sends them. */
  descriptors: z
    .array(
      z
        .array(ZDescriptorValueEntry, { error: "a descriptor is a list of { key, value } entries" })
        .min(1, { error: "a descriptor needs at least one entry" })
        .max(MAX_ENTRIES, { error: `a descriptor takes at most ${MAX_ENTRIES} entries` }),
      { error: "descriptors must be a list of descriptors" },
    )
    .min(1, { error: "descriptors must hold at least one descriptor" })
    .max(MAX_DESCRIPTORS, { error: `descriptors take at most ${MAX_DESCRIPTORS} descriptors` }),
  /** Envoy's `hits_addend`: the cost of each descriptor (0 means 1). @default 0 */
  hitsAddend: z
    .number({ error: "hitsAddend must be a number" })
    .int({ error: "hitsAddend must be a whole number" })
    .min(0, { error: "hitsAddend must not be negative" })
    .max(MAX_COST, { error: `hitsAddend must be at most ${MAX_COST}` })
    .default(0),
});
export type ExplainDescriptorsOptions = z.input<typeof ZExplainDescriptorsOptions>;

/** What one more call would get from a counter now (the store's peek). */
export type LiveOutcome = Omit<LimitOutcome, "scope" | "mode">;

/**
 * How a descriptor is decided:
 * - `rule`: a descriptor rule's limit, on the rule's counter for the value (`counter`);
 * - `unlimited`: its rule (or the raise in force) is unlimited: admitted, nothing counted;
 * - `replaced`: its rule is replaced by another rule this call matches: not checked, not counted;
 * - `mapped`: no rule takes it; the domain's mapping makes it a customer's or an address's request;
 * - `uncovered`: neither a rule nor the mapping covers it: answered OK, nothing spent;
 * - `invalid`: the mapping cannot read it (the service refuses the whole call, naming `field`).
 */
export type DescriptorVerdict =
  | "rule"
  | "unlimited"
  | "replaced"
  | "mapped"
  | "uncovered"
  | "invalid";

export interface ExplainedDescriptor {
  readonly entries: readonly { readonly key: string; readonly value: string }[];
  readonly verdict: DescriptorVerdict;
  /** The rule that matched (for `rule`, `unlimited` and `replaced`). */
  readonly rule: {
    readonly id: string;
    readonly name: string | null;
    readonly pattern: string;
    readonly mode: "enforce" | "dry-run";
    readonly limit: TDescriptorRule["limit"];
    readonly wildcardCounter: "per-value" | "shared";
  } | null;
  /** How each level matched: `key=value`, `key=prefix*` or the key alone. */
  readonly matchedAs: string | null;
  /** The counter the rule spends for this value: the domain and the values it counts. */
  readonly counter: string | null;
  /** The rules whose `replaces` drop this one (for `replaced`). */
  readonly replacedBy: readonly { readonly id: string; readonly name: string | null }[];
  /** The raise of this value in force now, which sets the limit instead of the rule's. */
  readonly raise: {
    readonly id: string;
    readonly factor: number | null;
    readonly limit: LimitSpec | null;
    readonly expiresAt: string;
  } | null;
  /** The limit that decides it now (the raise's, else the rule's); null without a rule. */
  readonly limit: LimitSpec | "deny" | "unlimited" | null;
  /** The scope its decisions are counted under (`descriptor:<id>`). */
  readonly scope: string | null;
  /** The counter's state for one more call; null when not counted or the store was not read. */
  readonly live: LiveOutcome | null;
  /** For `mapped`: the request the mapping makes, and its own explanation. */
  readonly mapped: {
    readonly customerId: string | null;
    readonly clientAddress: string | null;
    readonly tier: string | null;
    readonly method: string;
    readonly path: string;
    readonly endpointClass: string | null;
    readonly subject: string | null;
    readonly decision: { readonly allowed: boolean; readonly scope: string | null } | null;
    readonly explanation: readonly string[];
  } | null;
  /** For `invalid`: the entry to blame and why. */
  readonly problem: string | null;
  /** The verdict in words, one line each. */
  readonly explanation: readonly string[];
}

export interface DescriptorsExplanation {
  readonly policyVersion: number;
  readonly domain: string;
  readonly cost: number;
  readonly descriptors: readonly ExplainedDescriptor[];
  /**
   * What the call would get now: `OVER_LIMIT` if any descriptor would be rejected (shadow-mode
   * rules never reject), `OK` if none, null when a counter could not be read or a descriptor is
   * invalid.
   */
  readonly overallCode: "OK" | "OVER_LIMIT" | null;
  /** Why some live state is missing. */
  readonly liveError: string | null;
}

export async function explainDescriptors(
  options: ExplainDescriptorsOptions,
  deps: ExplainDeps,
): Promise<DescriptorsExplanation> {
  const input = parseOptions(ZExplainDescriptorsOptions, options);
  const snapshot = await readCompiledSnapshot({ customerId: null }, deps);
  const prepared = prepareSnapshot(snapshot);
  const cost = input.hitsAddend === 0 ? 1 : input.hitsAddend;
  const nowMs = deps.clock.nowMs();
  const rulings = ruleDescriptors(prepared.descriptorRules, input.domain, input.descriptors, nowMs);
  const mappings = prepared.descriptorMappings;
  const mapping = mappings.get(input.domain) ?? mappings.get("*") ?? null;
  let liveError: string | null = null;
  const peek = async (ruling: Extract<DescriptorRuling, { kind: "limited" }>) => {
    const check = descriptorCheckOf(ruling.match.rule, ruling.limit);
    // A deny is answered without the store, as the service answers it.
    if (ruling.limit === "deny") return liveOutcomeOf(denyOutcomeOf(check));
    try {
      const peeked = await deps.store.peek({
        subject: ruling.match.subject,
        checks: [check],
        cost,
      });
      const outcome = peeked.outcomes[0];
      return outcome === undefined ? null : liveOutcomeOf(outcome);
    } catch (error: unknown) {
      if (!(error instanceof StoreUnavailableError)) throw error;
      liveError = `The live state could not be read from Redis: ${error.message}`;
      return null;
    }
  };
  const descriptors = await Promise.all(
    rulings.map(async (ruling, index): Promise<ExplainedDescriptor> => {
      const entries = input.descriptors[index] ?? [];
      if (ruling.kind !== "unmatched") {
        const live = ruling.kind === "limited" ? await peek(ruling) : null;
        return explainRuled(entries, ruling, live);
      }
      const mappedRequest = requestOfDescriptor(mapping, entries, cost, `descriptors[${index}]`);
      return explainUnmatched(entries, mappedRequest, input.domain, deps);
    }),
  );
  const isInvalid = descriptors.some((descriptor) => descriptor.verdict === "invalid");
  const isUnknown = descriptors.some(
    (descriptor) =>
      (descriptor.verdict === "rule" && descriptor.live === null) ||
      (descriptor.verdict === "mapped" && descriptor.mapped?.decision == null),
  );
  const isOver = descriptors.some((descriptor) =>
    descriptor.verdict === "rule"
      ? descriptor.rule?.mode === "enforce" && descriptor.live?.allowed === false
      : descriptor.mapped?.decision?.allowed === false,
  );
  return {
    policyVersion: snapshot.version,
    domain: input.domain,
    cost,
    descriptors,
    overallCode: isInvalid ? null : isOver ? "OVER_LIMIT" : isUnknown ? null : "OK",
    liveError,
  };
}

const NOT_RULED = {
  rule: null,
  matchedAs: null,
  counter: null,
  replacedBy: [],
  raise: null,
  limit: null,
  scope: null,
  live: null,
  mapped: null,
  problem: null,
} as const;

function explainRuled(
  entries: ExplainedDescriptor["entries"],
  ruling: Exclude<DescriptorRuling, { kind: "unmatched" }>,
  live: LiveOutcome | null,
): ExplainedDescriptor {
  const { rule, subject, metricKey } = ruling.match;
  const pattern = formatDescriptorPattern(rule);
  const mode = rule.mode === "dry-run" ? "dry-run" : "enforce";
  const named = rule.name === null ? `rule ${pattern}` : `rule "${rule.name}" (${pattern})`;
  const lines = [`Matched ${named} as ${metricKey}.`];
  const raise = ruling.kind === "replaced" ? null : ruling.raise;
  let limit: ExplainedDescriptor["limit"] = null;
  let verdict: DescriptorVerdict;
  switch (ruling.kind) {
    case "replaced": {
      verdict = "replaced";
      const by = ruling.by.map((other) => other.name ?? other.id).join(", ");
      lines.push(`Replaced by ${by}, which this call also matches: not checked, not counted.`);
      break;
    }
    case "unlimited":
      verdict = "unlimited";
      limit = "unlimited";
      lines.push("Unlimited: answered OK, nothing counted.");
      break;
    case "limited":
      verdict = "rule";
      limit = ruling.limit;
      lines.push(
        ruling.limit === "deny"
          ? "Limit: deny (0 requests): every call is over the limit, without asking Redis."
          : `Limit: ${formatLimit(ruling.limit)}, on the counter ${subject}.`,
      );
      if (mode === "dry-run") {
        lines.push(
          "Shadow mode (dry-run): counted and charted as a would-reject, always answered OK.",
        );
      }
      if (live !== null) {
        lines.push(
          live.allowed
            ? `One more call would be admitted now: ${live.remaining} remaining.`
            : mode === "dry-run"
              ? "One more call would be rejected now if the rule enforced: a would-reject."
              : `One more call would be rejected now (OVER_LIMIT), retry after ${live.retryAfterMs} ms.`,
        );
      }
      break;
    default: {
      const unknown: never = ruling;
      throw new TypeError(`unknown descriptor ruling ${JSON.stringify(unknown)}`);
    }
  }
  if (raise !== null) {
    lines.splice(
      1,
      0,
      `Raised for this value until ${raise.expiresAt} (${
        raise.limit !== null ? formatLimit(raise.limit) : `factor ${raise.factor ?? 1}`
      }): the raise decides instead of the rule's limit.`,
    );
  }
  return {
    ...NOT_RULED,
    entries,
    verdict,
    rule: {
      id: rule.id,
      name: rule.name,
      pattern,
      mode,
      limit: rule.limit,
      wildcardCounter: rule.wildcardCounter,
    },
    matchedAs: metricKey,
    counter: verdict === "rule" ? subject : null,
    replacedBy:
      ruling.kind === "replaced"
        ? ruling.by.map((other) => ({ id: other.id, name: other.name }))
        : [],
    raise:
      raise === null
        ? null
        : { id: raise.id, factor: raise.factor, limit: raise.limit, expiresAt: raise.expiresAt },
    limit,
    scope: verdict === "rule" ? descriptorRuleScope(rule.id) : null,
    live,
    explanation: lines,
  };
}

async function explainUnmatched(
  entries: ExplainedDescriptor["entries"],
  mapped: ReturnType<typeof requestOfDescriptor>,
  domain: string,
  deps: ExplainDeps,
): Promise<ExplainedDescriptor> {
  const noRule = "No descriptor rule matches it.";
  switch (mapped.kind) {
    case "uncovered":
      return {
        ...NOT_RULED,
        entries,
        verdict: "uncovered",
        explanation: [
          noRule,
          `The descriptor mapping of ${domain} has no customer or client address entry for it: answered OK, nothing spent, counted as uncovered.`,
        ],
      };
    case "invalid":
      return {
        ...NOT_RULED,
        entries,
        verdict: "invalid",
        problem: `${mapped.field}: ${mapped.message}`,
        explanation: [
          noRule,
          `The service refuses the whole call with INVALID_ARGUMENT: ${mapped.field}: ${mapped.message}.`,
        ],
      };
    case "request":
      break;
    default: {
      const unknown: never = mapped;
      throw new TypeError(`unknown mapped descriptor ${JSON.stringify(unknown)}`);
    }
  }
  const request = mapped.request;
  const base = {
    customerId: request.customerId ?? null,
    clientAddress: request.clientAddress ?? null,
    tier: request.tier ?? null,
    method: request.method ?? "GET",
    path: request.path ?? "/",
    endpointClass: request.endpointClass ?? null,
  };
  const who =
    base.customerId !== null
      ? `customer ${base.customerId}`
      : `the anonymous address ${base.clientAddress ?? ""}`;
  const lines = [
    noRule,
    `The descriptor mapping makes it a request of ${who}: ${base.method} ${base.path}.`,
  ];
  try {
    const explained = await explainLimits(
      {
        ...(base.customerId === null ? {} : { customerId: base.customerId }),
        ...(base.tier === null ? {} : { tier: base.tier }),
        ...(base.endpointClass === null ? {} : { endpointClass: base.endpointClass }),
        method: base.method,
        path: base.path,
        ...(base.clientAddress === null ? {} : { clientAddress: base.clientAddress }),
      },
      deps,
    );
    return {
      ...NOT_RULED,
      entries,
      verdict: "mapped",
      mapped: {
        ...base,
        subject: explained.subject,
        decision:
          explained.decision === null
            ? null
            : { allowed: explained.decision.allowed, scope: explained.decision.scope },
        explanation: explained.explanation,
      },
      explanation: lines,
    };
  } catch (error: unknown) {
    // A mapped value explain cannot take (a tier name out of its pattern): say so, keep the rest.
    if (!(error instanceof AppError)) throw error;
    return {
      ...NOT_RULED,
      entries,
      verdict: "mapped",
      mapped: { ...base, subject: null, decision: null, explanation: [error.message] },
      explanation: lines,
    };
  }
}
