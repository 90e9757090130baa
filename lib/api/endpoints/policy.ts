import { ZLimitSpec, ZPolicyDocument } from "@limitplane/enforcer/policy";
import { z } from "zod";
import {
  explainDescriptors,
  ZExplainDescriptorsOptions,
} from "@/lib/control/explain/explain-descriptors";
import { explainLimits, ZExplainOptions } from "@/lib/control/explain/explain-limits";
import { exportPolicy } from "@/lib/control/policy/export-policy";
import { getSnapshotPage, ZSnapshotPageOptions } from "@/lib/control/policy/get-current-snapshot";
import { importPreparedPolicy } from "@/lib/control/policy/import-policy";
import { getPropagation } from "@/lib/control/region/read-propagation";
import { controlDeps, explainDeps, propagationDeps } from "@/lib/server/composition";
import { defineEndpoint } from "../endpoint";
import { readPolicyDocument } from "../read-policy-document";
import {
  changeContextOf,
  queryInt,
  strictBody,
  strictParams,
  ZChangeReceipt,
  ZReason,
} from "./shared";

const tag = "Policy";

export const getSnapshotEndpoint = defineEndpoint({
  method: "GET",
  path: "/api/v1/policy/snapshot",
  summary: "The current compiled policy, a page of entries at a time",
  description:
    "The latest policy version in Postgres (what every enforcer runs once it has applied it) with a page of its entries by key: `settings`, `tier:T`, `endpoint-class:E`, `customer:C[/endpoint:E]`, `incident:ID`, `candidate:ID`, each value as enforcers hold it. `checksum` is the entry set's (the sum of the entries' SHA-256 digests modulo 2^256). Pass `nextCursor` as `after` for the next page. `publishedAt` is null while the version waits for the publisher.",
  tag,
  access: "policy.read",
  query: strictParams({
    after: ZSnapshotPageOptions.shape.after,
    limit: queryInt("limit", 1, 5_000).optional(),
  }),
  response: z.object({
    version: z.number().int(),
    checksum: z.string(),
    entries: z.number().int().nullable(),
    deltaBytes: z.number().int().nullable(),
    createdAt: z.string(),
    publishedAt: z.string().nullable(),
    items: z.array(z.object({ key: z.string(), value: z.unknown() })).readonly(),
    nextCursor: z.string().nullable(),
  }),
  errors: ["CONFLICT"],
  handle: ({ query }) => getSnapshotPage(query, controlDeps()),
});

export const getPropagationEndpoint = defineEndpoint({
  method: "GET",
  path: "/api/v1/policy/propagation",
  summary: "Where a policy version has reached, region by region",
  description:
    "For each region in REGIONS (docs/regions.md), whether its Redis holds the version (`isApplied`), the latest version it holds, and while pending the last error its publication met. `version` defaults to the latest; a pending region has waited since `createdAt`. Without REGIONS, `regions` is empty: the snapshot's `publishedAt` says when the one Redis got it.",
  tag,
  access: "policy.read",
  query: strictParams({ version: queryInt("version", 1, 2_147_483_647).optional() }),
  response: z.object({
    version: z.number().int(),
    createdAt: z.string(),
    regions: z
      .array(
        z.object({
          region: z.string(),
          isApplied: z.boolean(),
          publishedVersion: z.number().int(),
          lastError: z.string().nullable(),
        }),
      )
      .readonly(),
  }),
  errors: ["NOT_FOUND"],
  handle: ({ query }) => getPropagation(query, propagationDeps()),
});

export const exportPolicyEndpoint = defineEndpoint({
  method: "GET",
  path: "/api/v1/policy/export",
  summary: "The whole policy as a canonical document",
  description:
    "Stable: two exports of the same policy are byte-identical, and a diff between two shows only what changed. `X-Policy-Version` is the latest version when it was read. Import it again with POST /api/v1/policy/import.",
  tag,
  access: "policy.read",
  response: z.object({ document: z.string(), policyVersion: z.number().int().nullable() }),
  errors: ["CONFLICT"],
  handle: () => exportPolicy({}, controlDeps()),
  headers: (result) => ({
    "x-policy-version": String(result.policyVersion ?? 0),
    "content-disposition": 'attachment; filename="limitplane-policy.json"',
  }),
  render: (result) => ({ body: result.document, contentType: "application/json; charset=utf-8" }),
  docs: { response: ZPolicyDocument },
});

/**
 * A million customers, each with a standing override, export to about 340 MiB of canonical JSON.
 * The body is parsed as it streams in and validated in a child process (read-policy-document.ts),
 * never held as one string; the limit bounds the memory an import may take (the parsed document,
 * a few times its size in bytes). docs/production.md states it.
 */
export const MAX_IMPORT_BYTES = 480 * 1024 * 1024;

export const importPolicyEndpoint = defineEndpoint({
  method: "POST",
  path: "/api/v1/policy/import",
  summary: "Replace the whole policy with a document, as one audited change",
  description:
    "The body is a policy document (as exported). All of it is validated before anything is written; every problem is reported by its position and field (`tiers[3].limit.capacity`), an unknown field included. The reason goes in the query string. A document identical to the policy in force writes nothing (no audit entry, no version) and answers 200 with `isNoChange: true` and `auditEntryId: null`.",
  tag,
  access: "policy.import",
  query: strictParams({ reason: ZReason }),
  // What readPolicyDocument returns: the document validated and prepared, or its problems.
  body: z.custom<Awaited<ReturnType<typeof readPolicyDocument>>>(
    (value) => typeof value === "object" && value !== null && "ok" in value,
  ),
  maxBodyBytes: MAX_IMPORT_BYTES,
  readBody: readPolicyDocument,
  response: z.object({
    summary: z.object({
      tiers: z.array(z.string()).readonly(),
      endpointClasses: z.array(z.string()).readonly(),
      dryRunCandidates: z.array(z.string()).readonly(),
      customers: z.number().int(),
      customerOverrides: z.number().int(),
      incidentOverrides: z.number().int(),
      exportChecksum: z.string().optional(),
    }),
    ...ZChangeReceipt,
    auditEntryId: ZChangeReceipt.auditEntryId.nullable(),
    /** True when the document equals the policy in force: nothing was written. */
    isNoChange: z.boolean(),
  }),
  errors: ["CONFLICT", "APPROVAL_REQUIRED"],
  handle: async ({ query, body, ...input }) => {
    let lastPhase = "";
    const result = await importPreparedPolicy(
      body,
      changeContextOf(input, query.reason),
      controlDeps(),
      {
        // A line as each phase starts and ends: a million-row import shows how far it is.
        onProgress: ({ phase, done, total }) => {
          if (phase === lastPhase && done < total) return;
          lastPhase = phase;
          console.info(`[${input.requestId}] import: ${phase} ${done}/${total}`);
        },
      },
    );
    return { ...result, isNoChange: "isNoChange" in result };
  },
  docs: { body: ZPolicyDocument },
});

const ZLimitOutcome = z.object({
  allowed: z.boolean(),
  limit: z.number(),
  remaining: z.number(),
  retryAfterMs: z.number(),
  resetAfterMs: z.number(),
  reason: z.enum(["limit-exceeded", "cost-exceeds-capacity", "queue-full"]).nullable(),
});

const ZTraceRule = z.object({
  scope: z.string(),
  source: z.enum([
    "tier",
    "customer-override",
    "incident-override",
    "ceiling",
    "address",
    "candidate",
  ]),
  status: z.enum([
    "applies",
    "dry-run",
    "replaced",
    "superseded",
    "off",
    "expired",
    "not-started",
    "nothing-to-scale",
  ]),
  limit: ZLimitSpec.nullable(),
  mode: z.enum(["enforce", "dry-run", "off"]),
  by: z.string().nullable(),
  incident: z
    .object({ factor: z.number().nullable(), startsAt: z.string(), expiresAt: z.string() })
    .nullable(),
  target: z.string().nullable(),
});

const ZLayer = z.enum(["account", "endpoint", "ceiling"]);

export const explainEndpoint = defineEndpoint({
  method: "GET",
  path: "/api/v1/explain",
  summary: "Which limits apply to a request, which rule decides each, and their live state",
  description:
    "Resolves a customer (or an anonymous `clientAddress`), a tier (default: the customer's in the registry) and an endpoint class (or `method` and `path`) against the current snapshot, then PEEKS at each limit's bucket in the shared Redis store: what one more request would get now. Nothing is consumed.",
  tag: "Explain",
  access: "policy.read",
  query: strictParams(ZExplainOptions.shape),
  response: z.object({
    policyVersion: z.number().int(),
    subject: z.string(),
    subjectKind: z.enum(["customer", "address"]),
    registryTier: z.string().nullable(),
    tier: z.string().nullable(),
    endpointClass: z.string(),
    cost: z.number(),
    checks: z
      .array(
        z.object({
          scope: z.string(),
          bucket: z.string(),
          layer: ZLayer,
          mode: z.enum(["enforce", "dry-run"]),
          limit: ZLimitSpec,
          onStoreFailure: z.enum(["open", "closed", "local"]),
          live: ZLimitOutcome.nullable(),
        }),
      )
      .readonly(),
    decision: z.object({ ...ZLimitOutcome.shape, scope: z.string().nullable() }).nullable(),
    liveError: z.string().nullable(),
    trace: z.object({
      nowMs: z.number(),
      subject: z.string(),
      tier: z
        .object({ requested: z.string().nullable(), used: z.string(), isFallback: z.boolean() })
        .nullable(),
      endpointClass: z.object({
        requested: z.string().nullable(),
        used: z.string(),
        via: z.enum(["request", "match", "default"]),
        rule: z.object({ method: z.string(), path: z.string() }).nullable(),
      }),
      slots: z
        .array(
          z.object({ layer: ZLayer, bucket: z.string(), rules: z.array(ZTraceRule).readonly() }),
        )
        .readonly(),
      notes: z.array(z.string()).readonly(),
    }),
    explanation: z.array(z.string()).readonly(),
  }),
  errors: ["CONFLICT"],
  handle: ({ query }) => explainLimits(query, explainDeps()),
});

const ZDescriptorLimit = z.union([ZLimitSpec, z.enum(["deny", "unlimited"])]);

export const explainDescriptorsEndpoint = defineEndpoint({
  method: "POST",
  path: "/api/v1/explain/descriptors",
  summary: "Which descriptor rule decides each descriptor of a rate-limit call, and its live state",
  description:
    "Explains a call to the rate-limit service (Envoy's RLS) before it is made: for a `domain` and its `descriptors` (each a list of `{ key, value }` entries, as Envoy sends them), the descriptor rule that matches each (the service's own matching: key and value, then the longest wildcard, then the key alone; `replaces` across the call; the raise of the value in force), the limit that applies, and what one more call would get now from the rule's counter (a PEEK of the shared Redis store: nothing is consumed). A shadow-mode (`dry-run`) rule shows its would-reject and never makes the call `OVER_LIMIT`. A descriptor no rule matches is explained as the request the domain's descriptor mapping makes of it. A route's own limit override is not taken.",
  tag: "Explain",
  access: "policy.read",
  body: strictBody(ZExplainDescriptorsOptions.shape),
  response: z.object({
    policyVersion: z.number().int(),
    domain: z.string(),
    cost: z.number(),
    overallCode: z.enum(["OK", "OVER_LIMIT"]).nullable(),
    liveError: z.string().nullable(),
    descriptors: z
      .array(
        z.object({
          entries: z.array(z.object({ key: z.string(), value: z.string() })).readonly(),
          verdict: z.enum(["rule", "unlimited", "replaced", "mapped", "uncovered", "invalid"]),
          rule: z
            .object({
              id: z.string(),
              name: z.string().nullable(),
              pattern: z.string(),
              mode: z.enum(["enforce", "dry-run"]),
              limit: ZDescriptorLimit,
              wildcardCounter: z.enum(["per-value", "shared"]),
            })
            .nullable(),
          matchedAs: z.string().nullable(),
          counter: z.string().nullable(),
          replacedBy: z.array(z.object({ id: z.string(), name: z.string().nullable() })).readonly(),
          raise: z
            .object({
              id: z.string(),
              factor: z.number().nullable(),
              limit: ZLimitSpec.nullable(),
              expiresAt: z.string(),
            })
            .nullable(),
          limit: ZDescriptorLimit.nullable(),
          scope: z.string().nullable(),
          live: ZLimitOutcome.nullable(),
          mapped: z
            .object({
              customerId: z.string().nullable(),
              clientAddress: z.string().nullable(),
              tier: z.string().nullable(),
              method: z.string(),
              path: z.string(),
              endpointClass: z.string().nullable(),
              subject: z.string().nullable(),
              decision: z.object({ allowed: z.boolean(), scope: z.string().nullable() }).nullable(),
              explanation: z.array(z.string()).readonly(),
            })
            .nullable(),
          problem: z.string().nullable(),
          explanation: z.array(z.string()).readonly(),
        }),
      )
      .readonly(),
  }),
  errors: ["CONFLICT"],
  handle: ({ body }) => explainDescriptors(body, explainDeps()),
});
