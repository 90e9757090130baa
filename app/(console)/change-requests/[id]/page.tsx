import type { Metadata } from "next";
import Link from "next/link";
import { notFound } from "next/navigation";
import { connection } from "next/server";
import { AuditDiff } from "@/components/audit/audit-diff";
import { Badge } from "@/components/ui/badge";
import { LocalTime } from "@/components/ui/local-time";
import { diffAuditValues } from "@/lib/console/audit-diff";
import { auditEntryHref } from "@/lib/console/chart-series";
import { can, isAppError } from "@/lib/control";
import type { ChangeRequestRecord } from "@/lib/control/change-request/change-request-record";
import { getChangeRequest } from "@/lib/control/change-request/find-change-request";
import type { PolicyChangePreview } from "@/lib/control/policy/preview-policy-change";
import { controlDeps } from "@/lib/server/composition";
import { requirePrincipal } from "@/lib/server/current-principal";
import { ChangePreview } from "../../policies/_components/change-preview";
import { STATUS_TONE } from "../change-request-words";
import { ChangeRequestActions } from "./change-request-actions";

export const metadata: Metadata = { title: "Change request" };

/** The stored preview, when it has the shape the policy preview gives. */
function previewOf(request: ChangeRequestRecord): PolicyChangePreview | null {
  const preview = request.preview;
  if (typeof preview !== "object" || preview === null) return null;
  return "limits" in preview && "fields" in preview && "subject" in preview
    ? (preview as PolicyChangePreview)
    : null;
}

/** The backtest's headline, when one ran. */
function backtestWords(backtest: unknown): string | null {
  if (typeof backtest !== "object" || backtest === null) return null;
  if ("error" in backtest && typeof backtest.error === "string") {
    return `The backtest could not run: ${backtest.error}`;
  }
  if ("isEmpty" in backtest && backtest.isEmpty === true) {
    return "The backtest found no recorded traffic to replay.";
  }
  return "A backtest of the last 24 h of recorded traffic was stored with the request (see the API's backtest field).";
}

export default async function ChangeRequestPage({ params }: { params: Promise<{ id: string }> }) {
  const { id } = await params;
  const principal = await requirePrincipal("policy.read", {
    next: `/change-requests/${encodeURIComponent(id)}`,
  });
  await connection();
  let request: ChangeRequestRecord;
  try {
    request = await getChangeRequest(decodeURIComponent(id), controlDeps());
  } catch (error: unknown) {
    if (isAppError(error) && (error.code === "NOT_FOUND" || error.code === "VALIDATION_FAILED")) {
      notFound();
    }
    throw error;
  }
  const preview = previewOf(request);
  const backtest = backtestWords(request.backtest);
  const isAuthor = principal.id === request.author.id || principal.id === request.author.operatorId;
  const isPending = request.status === "pending";
  const changes = diffAuditValues(request.diff.before, request.diff.after);

  return (
    <>
      <header className="page-header">
        <p className="small">
          <Link href="/change-requests">← Approvals</Link>
        </p>
        <h1>
          Change request <code>{request.id}</code>{" "}
          <Badge tone={STATUS_TONE[request.status]} dot>
            {request.status}
          </Badge>
        </h1>
        <p data-testid="change-request-headline">
          {request.action} of <code>{request.entityId}</code>, requested by{" "}
          <strong>{request.author.name}</strong> ({request.author.type}),{" "}
          <LocalTime at={request.createdAt} />: “{request.reason}”
        </p>
      </header>

      {request.isStale ? (
        <p className="panel" role="alert" data-testid="change-request-stale">
          <Badge tone="warn">stale</Badge> The policy changed since this request was previewed
          (version {request.basePolicyVersion ?? "none"}). Re-preview it and read the new diff
          before approving.
        </p>
      ) : null}

      <section className="panel" aria-labelledby="why-heading">
        <h2 id="why-heading">Why it needs approval</h2>
        {request.gatedBy.length === 0 ? (
          <p>Requested by choice: the approval settings would not have held it back.</p>
        ) : (
          <ul>
            {request.gatedBy.map((reason) => (
              <li key={reason}>{reason}</li>
            ))}
          </ul>
        )}
        <p className="small muted">
          Expires <LocalTime at={request.expiresAt} />. Previewed{" "}
          <LocalTime at={request.previewedAt} /> against policy version{" "}
          {request.basePolicyVersion ?? "none"}.
        </p>
      </section>

      <section className="panel" aria-labelledby="diff-heading" data-testid="change-request-diff">
        <h2 id="diff-heading">What changes</h2>
        <AuditDiff changes={changes} caption="What the change would change" />
        {preview !== null ? <ChangePreview preview={preview} /> : null}
        {backtest !== null ? <p className="small">{backtest}</p> : null}
      </section>

      {request.decision !== null ? (
        <section className="panel" aria-labelledby="decision-heading">
          <h2 id="decision-heading">Decision</h2>
          <p data-testid="change-request-decision">
            {request.status} by {request.decision.byName ?? "the system"},{" "}
            <LocalTime at={request.decision.at} />
            {request.decision.note !== null ? `: “${request.decision.note}”` : "."}
          </p>
          <ul className="small">
            {request.auditEntries.request !== null ? (
              <li>
                <a href={auditEntryHref(request.auditEntries.request)}>The request's audit entry</a>
              </li>
            ) : null}
            {request.auditEntries.decision !== null ? (
              <li>
                <a href={auditEntryHref(request.auditEntries.decision)}>
                  The decision's audit entry
                </a>
              </li>
            ) : null}
            {request.auditEntries.applied !== null ? (
              <li>
                <a href={auditEntryHref(request.auditEntries.applied)}>
                  The applied change's audit entry
                </a>
                {request.appliedPolicyVersion !== null
                  ? ` (policy version ${request.appliedPolicyVersion})`
                  : null}
              </li>
            ) : null}
          </ul>
        </section>
      ) : null}

      {isPending ? (
        <ChangeRequestActions
          id={request.id}
          isStaged={request.change.kind === "staged-change.start"}
          version={request.version}
          isStale={request.isStale}
          canDecide={
            principal.kind === "operator" && can(principal.role, "change.approve") && !isAuthor
          }
          canWithdraw={isAuthor}
          canRefresh={can(principal.role, "change.request")}
        />
      ) : null}
    </>
  );
}
