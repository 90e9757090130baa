import type { Metadata } from "next";
import Link from "next/link";
import { connection } from "next/server";
import { Badge } from "@/components/ui/badge";
import { LocalTime } from "@/components/ui/local-time";
import { formatDurationMs } from "@/lib/console";
import { can, listAuditEntries } from "@/lib/control";
import {
  countEligibleApprovers,
  findApprovalSettings,
} from "@/lib/control/approval/approval-settings-record";
import { MIN_ELIGIBLE_APPROVERS } from "@/lib/control/approval/update-approval-settings";
import { findStagedGuardSettings } from "@/lib/control/staged-change/staged-guard-settings";
import { controlDeps } from "@/lib/server/composition";
import { requirePrincipal } from "@/lib/server/current-principal";
import { RecentChanges } from "../_components/recent-changes";
import { type SettingField, SettingsPatchForm } from "./settings-patch-form";

export const metadata: Metadata = { title: "Approvals and staged change guard" };

const APPROVAL_FIELDS: readonly SettingField[] = [
  {
    name: "isEnabled",
    kind: "boolean",
    label: "Require a second person for the changes below",
    help: "Needs at least two enabled admins: the author of a change may not approve it.",
  },
  {
    name: "limitDecreasePercent",
    kind: "number",
    label: "Lowering a tier or endpoint-class limit by more than (%)",
    help: "0 gates every decrease.",
  },
  {
    name: "isCeilingChangeGated",
    kind: "boolean",
    label: "Any change to the global ceilings",
    help: "Per customer and per anonymous address.",
  },
  {
    name: "isDeletionGated",
    kind: "boolean",
    label: "Deleting a tier or an endpoint class",
    help: "Every request of its customers falls to the defaults.",
  },
  {
    name: "importChangedEntries",
    kind: "number",
    label: "An import changing more entries than",
    help: "Policy entries: tiers, classes, customers, overrides.",
  },
  {
    name: "requestLifetimeMs",
    kind: "number",
    label: "A request expires after (hours)",
    help: "Counted from its request or last re-preview.",
    scale: 3_600_000,
  },
];

const GUARD_FIELDS: readonly SettingField[] = [
  {
    name: "marginPercent",
    kind: "number",
    label: "Margin (percentage points)",
    help: "Reverts when the slice's rejection rate is above the rest's by more than this.",
  },
  {
    name: "minRequests",
    kind: "number",
    label: "Minimum requests in the slice per window",
    help: "A window with fewer is not judged; a step holds until it has this many.",
  },
  {
    name: "windowMs",
    kind: "number",
    label: "Window (seconds)",
    help: "From 1 s to 1 h.",
    scale: 1000,
  },
  {
    name: "consecutiveWindows",
    kind: "number",
    label: "Windows over the margin in a row",
    help: "How many judged windows in a row revert it.",
  },
];

export default async function SafeChangesPage() {
  const principal = await requirePrincipal("policy.read", { next: "/policies/safe-changes" });
  await connection();
  const db = controlDeps().db;
  const [approvals, eligible, guard, approvalHistory, guardHistory] = await Promise.all([
    findApprovalSettings(db),
    countEligibleApprovers(db),
    findStagedGuardSettings(db),
    can(principal.role, "audit.read")
      ? listAuditEntries(
          { entityType: "approval-settings", entityId: "approval-settings", limit: 5 },
          controlDeps(),
        )
      : null,
    can(principal.role, "audit.read")
      ? listAuditEntries(
          { entityType: "staged-guard-settings", entityId: "staged-guard-settings", limit: 5 },
          controlDeps(),
        )
      : null,
  ]);
  const canEdit = can(principal.role, "settings.write");
  const isShortOfApprovers = eligible < MIN_ELIGIBLE_APPROVERS;
  return (
    <>
      <header className="page-header">
        <p className="small">
          <Link href="/policies">← Policies</Link>
        </p>
        <h1>Approvals and the staged change guard</h1>
        <p>
          Which changes need a second person, and when a staged change reverts by itself. See{" "}
          <Link href="/change-requests">the approval queue</Link>.
        </p>
      </header>

      <section className="panel" aria-labelledby="approvals-heading">
        <h2 id="approvals-heading">
          Approvals{" "}
          <Badge tone={approvals.isEnabled ? "ok" : "muted"} dot>
            {approvals.isEnabled ? "on" : "off"}
          </Badge>
        </h2>
        <p data-testid="eligible-approvers">
          {eligible} enabled {eligible === 1 ? "admin" : "admins"} may approve.
          {approvals.updatedAt === null ? null : (
            <>
              {" "}
              Version {approvals.version}, changed <LocalTime at={approvals.updatedAt} relative />.
            </>
          )}
        </p>
        {isShortOfApprovers && !approvals.isEnabled ? (
          <p className="panel" role="note" data-testid="approvers-short">
            <strong>Approvals cannot be turned on yet:</strong> they need at least{" "}
            {MIN_ELIGIBLE_APPROVERS} enabled admins, since the author of a change may not approve
            it, and there {eligible === 1 ? "is" : "are"} {eligible}. Add or enable another admin
            first (<code>POST /api/v1/operators</code>, or <code>npm run admin:create</code>).
          </p>
        ) : null}
        {canEdit ? (
          <SettingsPatchForm
            saveUrl="/api/v1/approval-settings"
            version={approvals.version}
            fields={APPROVAL_FIELDS}
            values={{ ...approvals }}
            label="Approval settings"
            saveLabel="Save approval settings"
          />
        ) : (
          <p className="muted" data-testid="read-only">
            Only admins change these (your role: {principal.role}). Approvals are{" "}
            {approvals.isEnabled ? "on" : "off"}; lowering a limit by more than{" "}
            {approvals.limitDecreasePercent} % needs approval; requests expire after{" "}
            {formatDurationMs(approvals.requestLifetimeMs)}.
          </p>
        )}
      </section>

      <section className="panel" aria-labelledby="guard-heading">
        <h2 id="guard-heading">Staged change guard defaults</h2>
        <p data-testid="guard-defaults">
          A staged change started without its own guard reverts when its slice&apos;s rejection rate
          exceeds the rest&apos;s by more than {guard.guard.marginPercent} points, with at least{" "}
          {guard.guard.minRequests} requests in the slice, for {guard.guard.consecutiveWindows}{" "}
          windows of {formatDurationMs(guard.guard.windowMs)} in a row. Running staged changes keep
          the guard they started with.
        </p>
        {canEdit ? (
          <SettingsPatchForm
            saveUrl="/api/v1/staged-guard-settings"
            version={guard.version}
            fields={GUARD_FIELDS}
            values={{ ...guard.guard }}
            label="Staged change guard defaults"
            saveLabel="Save guard defaults"
          />
        ) : null}
      </section>
      {approvalHistory !== null && guardHistory !== null ? (
        <RecentChanges
          history={{
            ...approvalHistory,
            entries: [...approvalHistory.entries, ...guardHistory.entries]
              .sort((a, b) => Date.parse(b.at) - Date.parse(a.at))
              .slice(0, 8),
          }}
        />
      ) : null}
    </>
  );
}
