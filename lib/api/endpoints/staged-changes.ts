import { ZDryRunCandidate, ZLimitSpec } from "@limitplane/enforcer/policy";
import { z } from "zod";
import { abortStagedChange } from "@/lib/control/staged-change/abort-staged-change";
import { advanceStagedChange } from "@/lib/control/staged-change/advance-staged-change";
import { completeStagedChange } from "@/lib/control/staged-change/complete-staged-change";
import { getStagedChange } from "@/lib/control/staged-change/get-staged-change";
import { listStagedChanges } from "@/lib/control/staged-change/list-staged-changes";
import { pauseStagedChange } from "@/lib/control/staged-change/pause-staged-change";
import { resumeStagedChange } from "@/lib/control/staged-change/resume-staged-change";
import { STAGED_CHANGE_STATES } from "@/lib/control/staged-change/staged-change-record";
import { ZGuardState, ZStagedGuard } from "@/lib/control/staged-change/staged-guard";
import {
  findStagedGuardSettings,
  updateStagedGuardSettings,
  ZUpdateStagedGuardSettingsOptions,
} from "@/lib/control/staged-change/staged-guard-settings";
import {
  startStagedChange,
  ZStartStagedChangeOptions,
} from "@/lib/control/staged-change/start-staged-change";
import { authDeps, controlDeps } from "@/lib/server/composition";
import { defineEndpoint } from "../endpoint";
import {
  changeContextOf,
  strictBody,
  strictParams,
  ZAuditReceipt,
  ZChangeReceipt,
  ZExpectedVersion,
  ZReason,
  ZTimestamps,
} from "./shared";

export const ZStagedChangeRecord = z.object({
  id: z.string(),
  target: z.string().describe("The rule it changes, as a scope."),
  limit: ZLimitSpec,
  previousLimit: ZLimitSpec.nullable(),
  origin: z.enum(["edit", "candidate"]),
  steps: z.array(z.object({ sliceBasisPoints: z.number().int(), dwellMs: z.number().int() })),
  stepIndex: z.number().int(),
  sliceBasisPoints: z.number().int().describe("The current step's slice, in basis points."),
  state: z.enum(STAGED_CHANGE_STATES),
  stepStartedAt: z.string(),
  pausedAt: z.string().nullable(),
  guard: ZStagedGuard,
  breachedWindows: z.number().int(),
  lastWindowEndMs: z.number().nullable(),
  guardState: ZGuardState.nullable(),
  holdNotifiedAt: z.string().nullable(),
  endReason: z.string().nullable().describe("Why it ended, in words (a revert's guard figures)."),
  endFigures: z.unknown(),
  endedAt: z.string().nullable(),
  createdBy: z.string(),
  ...ZTimestamps,
});
const ZStagedChangeChange = z.object({ stagedChange: ZStagedChangeRecord, ...ZChangeReceipt });
const ZStagedChangeParams = strictParams({ id: ZDryRunCandidate.shape.id });
const ZVersionedBody = strictBody({ expectedVersion: ZExpectedVersion, reason: ZReason });
const tag = "Staged changes";

export const listStagedChangesEndpoint = defineEndpoint({
  method: "GET",
  path: "/api/v1/staged-changes",
  summary: "List staged changes, newest first",
  tag,
  access: "policy.read",
  response: z.object({ stagedChanges: z.array(ZStagedChangeRecord) }),
  handle: async () => ({ stagedChanges: await listStagedChanges(controlDeps()) }),
});

export const startStagedChangeEndpoint = defineEndpoint({
  method: "POST",
  path: "/api/v1/staged-changes",
  summary: "Start a limit change over a slice of subjects, widened step by step",
  description:
    "Admins only: completing it rewrites a tier, an endpoint class or a ceiling. Give target and limit (an edit) or candidateId (a dry-run candidate); steps end at 100 %.",
  tag,
  access: "candidate.promote",
  body: strictBody({ ...ZStartStagedChangeOptions.shape, reason: ZReason }),
  response: ZStagedChangeChange,
  successStatus: 201,
  errors: ["CONFLICT", "NOT_FOUND"],
  handle: ({ body: { reason, ...options }, ...input }) =>
    startStagedChange(options, changeContextOf(input, reason), controlDeps()),
});

export const getStagedChangeEndpoint = defineEndpoint({
  method: "GET",
  path: "/api/v1/staged-changes/{id}",
  summary: "Get a staged change",
  tag,
  access: "policy.read",
  params: ZStagedChangeParams,
  response: z.object({ stagedChange: ZStagedChangeRecord }),
  errors: ["NOT_FOUND"],
  handle: async ({ params }) => ({
    stagedChange: await getStagedChange(params.id, controlDeps()),
  }),
});

type Verb = typeof pauseStagedChange;

function verbEndpoint(
  verb: string,
  summary: string,
  access: "candidate.write" | "candidate.promote",
  run: Verb,
) {
  return defineEndpoint({
    method: "POST",
    path: `/api/v1/staged-changes/{id}/${verb}`,
    summary,
    tag,
    access,
    params: ZStagedChangeParams,
    body: ZVersionedBody,
    response: ZStagedChangeChange,
    errors: ["NOT_FOUND", "VERSION_CONFLICT", "CONFLICT"],
    handle: ({ params, body: { reason, expectedVersion }, ...input }) =>
      run({ id: params.id, expectedVersion }, changeContextOf(input, reason), controlDeps()),
  });
}

export const pauseStagedChangeEndpoint = verbEndpoint(
  "pause",
  "Hold a staged change at its step (the guard keeps watching)",
  "candidate.write",
  pauseStagedChange,
);
export const resumeStagedChangeEndpoint = verbEndpoint(
  "resume",
  "Continue a paused staged change",
  "candidate.write",
  resumeStagedChange,
);
export const advanceStagedChangeEndpoint = verbEndpoint(
  "advance",
  "Widen a staged change's slice to its next step now",
  "candidate.promote",
  advanceStagedChange,
);
export const completeStagedChangeEndpoint = verbEndpoint(
  "complete",
  "Make a staged change at its last step the policy",
  "candidate.promote",
  completeStagedChange,
);
export const abortStagedChangeEndpoint = verbEndpoint(
  "abort",
  "Stop a staged change: everyone goes back to the rule it targeted",
  "candidate.write",
  abortStagedChange,
);

export const ZStagedGuardSettingsRecord = z.object({
  guard: ZStagedGuard,
  version: z.number().int().describe("0 until first saved; send it back as expectedVersion."),
  createdAt: z.string().nullable(),
  updatedAt: z.string().nullable(),
});

export const getStagedGuardSettingsEndpoint = defineEndpoint({
  method: "GET",
  path: "/api/v1/staged-guard-settings",
  summary: "The guard a staged change gets unless it is given its own",
  tag,
  access: "policy.read",
  response: z.object({ settings: ZStagedGuardSettingsRecord }),
  handle: async () => ({ settings: await findStagedGuardSettings(controlDeps().db) }),
});

export const updateStagedGuardSettingsEndpoint = defineEndpoint({
  method: "PATCH",
  path: "/api/v1/staged-guard-settings",
  summary: "Change the guard defaults of staged changes started from now on",
  description:
    "Running staged changes keep the guard they started with. Give any of marginPercent, minRequests, windowMs and consecutiveWindows.",
  tag,
  access: "settings.write",
  body: strictBody({ ...ZUpdateStagedGuardSettingsOptions.shape, reason: ZReason }),
  response: z.object({ settings: ZStagedGuardSettingsRecord, ...ZAuditReceipt }),
  errors: ["VERSION_CONFLICT"],
  handle: ({ body: { reason, ...change }, ...input }) =>
    updateStagedGuardSettings(change, changeContextOf(input, reason), authDeps()),
});
