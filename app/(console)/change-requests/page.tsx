import type { Metadata } from "next";
import Link from "next/link";
import { connection } from "next/server";
import { AutoRefresh } from "@/components/auto-refresh";
import { Badge } from "@/components/ui/badge";
import { EmptyState } from "@/components/ui/empty-state";
import { LocalTime } from "@/components/ui/local-time";
import { ScrollRegion } from "@/components/ui/scroll-region";
import { findApprovalSettings } from "@/lib/control/approval/approval-settings-record";
import type { ChangeRequestRecord } from "@/lib/control/change-request/change-request-record";
import { listChangeRequests } from "@/lib/control/change-request/list-change-requests";
import { controlDeps } from "@/lib/server/composition";
import { requirePrincipal } from "@/lib/server/current-principal";
import { STATUS_TONE } from "./change-request-words";

export const metadata: Metadata = { title: "Approvals" };

function RequestTable({
  requests,
  caption,
}: {
  requests: readonly ChangeRequestRecord[];
  caption: string;
}) {
  return (
    <ScrollRegion label={caption}>
      <table className="data">
        <caption className="visually-hidden">{caption}</caption>
        <thead>
          <tr>
            <th scope="col">Change</th>
            <th scope="col">Status</th>
            <th scope="col">Requested by</th>
            <th scope="col">Requested</th>
            <th scope="col">Expires</th>
          </tr>
        </thead>
        <tbody>
          {requests.map((request) => (
            <tr key={request.id}>
              <td data-label="Change">
                <Link href={`/change-requests/${request.id}`}>
                  {request.action} <code>{request.entityId}</code>
                </Link>
                <div className="small muted">{request.reason}</div>
              </td>
              <td data-label="Status">
                <Badge tone={STATUS_TONE[request.status]} dot>
                  {request.status}
                </Badge>{" "}
                {request.isStale ? <Badge tone="warn">stale</Badge> : null}
              </td>
              <td data-label="Requested by">
                {request.author.name} <span className="small muted">({request.author.type})</span>
              </td>
              <td data-label="Requested">
                <LocalTime at={request.createdAt} />
              </td>
              <td data-label="Expires">
                <LocalTime at={request.expiresAt} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </ScrollRegion>
  );
}

/** The queue of change requests waiting for a second person, and the latest decided ones. */
export default async function ChangeRequestsPage() {
  await requirePrincipal("policy.read", { next: "/change-requests" });
  await connection();
  const [pending, recent, settings] = await Promise.all([
    listChangeRequests({ status: "pending", limit: 200 }, controlDeps()),
    listChangeRequests({ limit: 30 }, controlDeps()),
    findApprovalSettings(controlDeps().db),
  ]);
  const decided = recent.filter((request) => request.status !== "pending");
  return (
    <>
      <header className="page-header">
        <h1>Approvals</h1>
        <p>
          Changes that need a second person: {settings.isEnabled ? "" : "approvals are off, so "}
          {settings.isEnabled
            ? `a tier or endpoint-class limit lowered by more than ${settings.limitDecreasePercent} %, ${settings.isCeilingChangeGated ? "any ceiling change, " : ""}${settings.isDeletionGated ? "deleting a tier or class, " : ""}an import changing more than ${settings.importChangedEntries} entries.`
            : "nothing is held back; requests can still be made by choice."}{" "}
          <AutoRefresh intervalMs={10_000} />
        </p>
        <p className="small">
          <Link href="/policies/safe-changes">Change the approval settings</Link>
        </p>
      </header>
      <section className="panel" aria-labelledby="pending-heading">
        <h2 id="pending-heading">Waiting for approval ({pending.length})</h2>
        {pending.length === 0 ? (
          <EmptyState title="No change waits for approval" />
        ) : (
          <RequestTable requests={pending} caption="Change requests waiting for approval" />
        )}
      </section>
      <section className="panel" aria-labelledby="decided-heading">
        <h2 id="decided-heading">Recently decided</h2>
        {decided.length === 0 ? (
          <EmptyState title="No change request has been decided yet" />
        ) : (
          <RequestTable requests={decided} caption="Recently decided change requests" />
        )}
      </section>
    </>
  );
}
