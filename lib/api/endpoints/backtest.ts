import { z } from "zod";
import { runBacktest, ZRunBacktestOptions } from "@/lib/control/backtest/run-backtest";
import { controlDeps } from "@/lib/server/composition";
import { defineEndpoint } from "../endpoint";
import { strictBody } from "./shared";

const ZMinute = z.object({
  minuteMs: z.number(),
  recordedAdmitted: z.number(),
  recordedRejected: z.number(),
  nowAdmitted: z.number(),
  nowRejected: z.number(),
  draftAdmitted: z.number(),
  draftRejected: z.number(),
});

export const ZBacktestResult = z.object({
  span: z.object({
    fromMs: z.number(),
    toMs: z.number(),
    warmUpFromMs: z.number(),
    startsFrom: z.string(),
  }),
  policyVersion: z.number().int(),
  minutes: z.array(ZMinute).readonly(),
  totals: z.object({
    requests: z.number(),
    recordedRejected: z.number(),
    nowRejected: z.number(),
    draftRejected: z.number(),
    moreRejected: z.number(),
    moreAdmitted: z.number(),
  }),
  byTier: z
    .array(
      z.object({
        tier: z.string().nullable(),
        requests: z.number(),
        nowRejected: z.number(),
        draftRejected: z.number(),
        customersAffected: z.number().int(),
      }),
    )
    .readonly(),
  mostAffected: z
    .array(
      z.object({
        subject: z.string(),
        customerId: z.string().nullable(),
        tier: z.string().nullable(),
        requests: z.number(),
        moreRejected: z.number(),
        moreAdmitted: z.number(),
        bindingNow: z.string().nullable(),
        bindingDraft: z.string().nullable(),
      }),
    )
    .readonly(),
  subjectsAffected: z.number().int(),
  customersAffected: z.number().int(),
  recordedRequests: z.number().int(),
  warmUpRequests: z.number().int(),
  withoutStore: z.number().int(),
  localStage: z.number().int(),
  replayedRequests: z.number().int(),
  trust: z.object({
    sampleRates: z.array(z.number()).readonly(),
    recordedRequests: z.number().int(),
    estimatedRequests: z.number(),
    gateways: z.number().int(),
    dropped: z.number().int(),
    gaps: z
      .array(
        z.object({
          gatewayId: z.string(),
          fromMs: z.number(),
          toMs: z.number(),
          reason: z.enum(["stream-trimmed", "buffer-full"]),
          requests: z.number().int().nullable(),
        }),
      )
      .readonly(),
    firstRecordedMs: z.number().nullable(),
    lastRecordedMs: z.number().nullable(),
    withoutStore: z.number().int(),
    fidelity: z.object({
      compared: z.number().int(),
      matched: z.number().int(),
      rate: z.number().nullable(),
    }),
    notes: z.array(z.string()).readonly(),
  }),
  isEmpty: z.boolean(),
});

export const runBacktestEndpoint = defineEndpoint({
  method: "POST",
  path: "/api/v1/backtest",
  summary: "What a draft policy would have done to the recorded traffic",
  description:
    "Replays the traffic record of the last `windowMs` (default 24 h, at most 48 h) through the pure limiter core under the policy in force and under `draft` (a tier, endpoint-class or settings edit as the policy preview takes it, a customer override, an incident raise in force over the whole window, or a dry-run candidate as if promoted), at the recorded times and in the recorded order, from empty buckets at the start of a warm-up (`warmUpMs`, default 15 min) before the window. Returns admitted and rejected per minute (recorded, now, draft), totals per tier, the most affected customers with their changed outcomes and binding scopes, and how far to trust it (sample rates, gaps, fidelity of the replay against the recorded decisions). Counts of sampled records are scaled by 1 / sample rate. Writes nothing.",
  tag: "Backtest",
  access: "policy.read",
  body: strictBody(ZRunBacktestOptions.shape),
  response: ZBacktestResult,
  handle: ({ body }) => runBacktest(body, controlDeps()),
});
