"use client";

import type { TEndpointClass, TKeyBy, TPolicyLimit } from "@limitplane/enforcer/policy";
import { formatFieldPath, MAX_COST, ON_STORE_FAILURE_DEFAULTS } from "@limitplane/enforcer/policy";
import { useState } from "react";
import {
  draftOf,
  emptyDraft,
  type FieldErrorMap,
  type LimitDraft,
  validateDraft,
} from "../../_components/limit-draft";
import { Field } from "../../_components/limit-fields";
import { OptionalLimitFields } from "../../_components/optional-limit-fields";
import { type BuildResult, PolicyEditForm } from "../../_components/policy-edit-form";
import styles from "../../_components/policy-form.module.css";
import { stageOfEdit } from "../../_components/staged-steps-draft";

interface OptionalDraft {
  readonly isOn: boolean;
  readonly draft: LimitDraft;
}

function optionalOf(
  limit: TEndpointClass["ceiling"],
  fallback: LimitDraft["onStoreFailure"],
): OptionalDraft {
  return limit === null
    ? { isOn: false, draft: emptyDraft(fallback) }
    : { isOn: true, draft: draftOf(limit) };
}

/** `POST /v1/reports` per line. */
function matchTextOf(match: TEndpointClass["match"]): string {
  return match.map((rule) => `${rule.method} ${rule.path}`).join("\n");
}

function parseMatchText(text: string): {
  rules: { method: string; path: string }[];
  error: string | null;
} {
  const rules: { method: string; path: string }[] = [];
  for (const [index, raw] of text.split("\n").entries()) {
    const line = raw.trim();
    if (line === "") continue;
    const parts = line.split(/\s+/);
    if (parts.length !== 2) {
      return {
        rules,
        error: `Line ${index + 1}: write a method and a path, e.g. "GET /v1/reports/**".`,
      };
    }
    rules.push({ method: parts[0] ?? "", path: parts[1] ?? "" });
  }
  return { rules, error: null };
}

/**
 * An endpoint class's cost, match rules, per-tier limits, anonymous limit, ceiling and keying,
 * edited with a preview. Each per-tier limit is optional: without one, the tier's account limit
 * and the ceilings are all that apply on this class.
 */
export function EndpointClassEditForm({
  endpointClass,
  version,
  tiers,
}: {
  endpointClass: TEndpointClass;
  version: number;
  tiers: readonly string[];
}) {
  const [cost, setCost] = useState(String(endpointClass.cost));
  const [keyBy, setKeyBy] = useState<TKeyBy>(endpointClass.keyBy);
  const [matchText, setMatchText] = useState(matchTextOf(endpointClass.match));
  const [tierLimits, setTierLimits] = useState<Record<string, OptionalDraft>>(() =>
    Object.fromEntries(
      tiers.map((tier) => [
        tier,
        optionalOf(endpointClass.limits[tier] ?? null, ON_STORE_FAILURE_DEFAULTS.customer),
      ]),
    ),
  );
  const [anonymous, setAnonymous] = useState(() =>
    optionalOf(endpointClass.anonymousLimit, ON_STORE_FAILURE_DEFAULTS.anonymousEndpoint),
  );
  const [ceiling, setCeiling] = useState(() =>
    optionalOf(endpointClass.ceiling, ON_STORE_FAILURE_DEFAULTS.ceiling),
  );

  const build = (): BuildResult => {
    const errors: Record<string, string> = {};
    const costNumber = cost.trim() === "" ? Number.NaN : Number(cost);
    if (!Number.isInteger(costNumber) || costNumber < 0 || costNumber > MAX_COST) {
      errors.cost = `cost must be a whole number from 0 (counted, never limited) to ${MAX_COST}`;
    }
    const match = parseMatchText(matchText);
    if (match.error !== null) errors.match = match.error;
    const limits: Record<string, TPolicyLimit> = {};
    for (const tier of tiers) {
      const entry = tierLimits[tier];
      if (entry === undefined || !entry.isOn) continue;
      const result = validateDraft(entry.draft, ["limits", tier]);
      Object.assign(errors, result.errors);
      if (result.limit !== null) limits[tier] = result.limit;
    }
    const anonymousLimit = anonymous.isOn
      ? validateDraft(anonymous.draft, ["anonymousLimit"])
      : null;
    if (anonymousLimit !== null) Object.assign(errors, anonymousLimit.errors);
    const ceilingLimit = ceiling.isOn ? validateDraft(ceiling.draft, ["ceiling"]) : null;
    if (ceilingLimit !== null) Object.assign(errors, ceilingLimit.errors);
    if (Object.keys(errors).length > 0) return { ok: false, errors };
    const change = {
      cost: costNumber,
      keyBy,
      match: match.rules,
      limits,
      anonymousLimit: anonymousLimit?.limit ?? null,
      ceiling: ceilingLimit?.limit ?? null,
    };
    return {
      ok: true,
      preview: {
        kind: "endpoint-class",
        name: endpointClass.name,
        ...change,
      } as BuildResultPreview,
      body: change,
      stage: stageOfEdit(
        [
          ...tiers.map((tier) => ({
            target: `tier:${tier}/endpoint:${endpointClass.name}`,
            before: endpointClass.limits[tier] ?? null,
            after: limits[tier] ?? null,
          })),
          {
            target: `address/endpoint:${endpointClass.name}`,
            before: endpointClass.anonymousLimit,
            after: anonymousLimit?.limit ?? null,
          },
          {
            target: `ceiling/endpoint:${endpointClass.name}`,
            before: endpointClass.ceiling,
            after: ceilingLimit?.limit ?? null,
          },
        ],
        cost !== String(endpointClass.cost) ||
          keyBy !== endpointClass.keyBy ||
          matchText.trim() !== matchTextOf(endpointClass.match).trim()
          ? "its cost, keying or match rules"
          : null,
      ),
    };
  };

  return (
    <PolicyEditForm
      subject={`endpoint class "${endpointClass.name}"`}
      version={version}
      saveUrl={`/api/v1/endpoint-classes/${encodeURIComponent(endpointClass.name)}`}
      build={build}
      isStageable
      renderFields={(errors: FieldErrorMap) => {
        const matchErrors = Object.entries(errors)
          .filter(([path]) => path === "match" || path.startsWith("match["))
          .map(([path, message]) => (path === "match" ? message : `${path}: ${message}`));
        return (
          <>
            <div className={styles.fieldRow}>
              <Field
                id="class-cost"
                label="Cost per request"
                error={errors.cost}
                help="Units each request spends on every limit it meets; 0 counts without limiting."
              >
                <input
                  id="class-cost"
                  inputMode="numeric"
                  value={cost}
                  onChange={(event) => setCost(event.target.value)}
                  aria-invalid={errors.cost ? true : undefined}
                />
              </Field>
              <Field
                id="class-key-by"
                label="Anonymous callers are counted by"
                error={errors.keyBy}
                help="Address and route keeps sign-in attempts apart from the address's other traffic."
              >
                <select
                  id="class-key-by"
                  value={keyBy}
                  onChange={(event) => setKeyBy(event.target.value as TKeyBy)}
                >
                  <option value="address">address</option>
                  <option value="address-and-route">address and route</option>
                </select>
              </Field>
            </div>
            <Field
              id="class-match"
              label="Requests that belong to it (one per line: METHOD /path)"
              error={matchErrors.length > 0 ? matchErrors.join(" ") : undefined}
              help='"*" is one path segment, "**" any number (last only); "*" as the method is any method.'
            >
              <textarea
                id="class-match"
                className={styles.matchRules}
                rows={Math.max(2, matchText.split("\n").length + 1)}
                value={matchText}
                onChange={(event) => setMatchText(event.target.value)}
                aria-invalid={matchErrors.length > 0 ? true : undefined}
              />
            </Field>
            {tiers.map((tier) => {
              const entry =
                tierLimits[tier] ?? optionalOf(null, ON_STORE_FAILURE_DEFAULTS.customer);
              return (
                <OptionalLimitFields
                  key={tier}
                  legend={`Limit for ${tier} customers on this class`}
                  absentText={`None: ${tier} customers are held here by their account limit and the ceilings only.`}
                  path={["limits", tier]}
                  draft={entry.draft}
                  isOn={entry.isOn}
                  errors={errors}
                  idPrefix={`limit-${tier}`}
                  isGlobalAllowed
                  onChange={(draft) =>
                    setTierLimits({ ...tierLimits, [tier]: { ...entry, draft } })
                  }
                  onToggle={(isOn) => setTierLimits({ ...tierLimits, [tier]: { ...entry, isOn } })}
                />
              );
            })}
            {errors[formatFieldPath(["limits"])] ? (
              <p className={styles.fieldError}>{errors[formatFieldPath(["limits"])]}</p>
            ) : null}
            <OptionalLimitFields
              legend="Limit for anonymous callers, per address"
              absentText="None: anonymous requests here meet only the per-address ceiling."
              path={["anonymousLimit"]}
              draft={anonymous.draft}
              isOn={anonymous.isOn}
              errors={errors}
              idPrefix="anonymous"
              onChange={(draft) => setAnonymous({ ...anonymous, draft })}
              onToggle={(isOn) => setAnonymous({ ...anonymous, isOn })}
            />
            <OptionalLimitFields
              legend="Ceiling on this class, for every customer"
              absentText="None: only the per-customer ceiling applies."
              path={["ceiling"]}
              draft={ceiling.draft}
              isOn={ceiling.isOn}
              errors={errors}
              idPrefix="class-ceiling"
              isGlobalAllowed
              onChange={(draft) => setCeiling({ ...ceiling, draft })}
              onToggle={(isOn) => setCeiling({ ...ceiling, isOn })}
            />
          </>
        );
      }}
    />
  );
}

type BuildResultPreview = Extract<BuildResult, { ok: true }>["preview"];
