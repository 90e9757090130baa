import type { Metadata } from "next";
import Link from "next/link";
import { connection } from "next/server";
import { Badge, type BadgeTone } from "@/components/ui/badge";
import { EmptyState } from "@/components/ui/empty-state";
import { LocalTime } from "@/components/ui/local-time";
import { ScrollRegion } from "@/components/ui/scroll-region";
import { auditEntryHref, formatNumber } from "@/lib/console";
import { can, listAuditEntries } from "@/lib/control";
import { findAuditWebhookSettings } from "@/lib/control/audit-webhook/audit-webhook-settings";
import {
  type AuditWebhookDeliveries,
  type AuditWebhookDeliveryState,
  listAuditWebhookDeliveries,
} from "@/lib/control/audit-webhook/list-audit-webhook-deliveries";
import { controlDeps } from "@/lib/server/composition";
import { requirePrincipal } from "@/lib/server/current-principal";
import { RecentChanges } from "../../policies/_components/recent-changes";
import { entityHistoryHref } from "../audit-search-params";
import { AuditWebhookForm } from "./audit-webhook-form";

export const metadata: Metadata = { title: "Audit webhook" };

/** Most deliveries listed. */
const DELIVERIES_SHOWN = 10;

const STATE_WORDS: Readonly<Record<AuditWebhookDeliveryState, { tone: BadgeTone; words: string }>> =
  {
    sent: { tone: "ok", words: "sent" },
    waiting: { tone: "info", words: "waiting" },
    retrying: { tone: "warn", words: "failed, retrying" },
  };

export default async function AuditWebhookPage() {
  const principal = await requirePrincipal("audit.read", { next: "/audit/webhook" });
  await connection();
  const isAdmin = can(principal.role, "settings.write");
  return (
    <>
      <header className="page-header">
        <p className="small">
          <Link href="/audit">← Audit log</Link>
        </p>
        <h1>Audit webhook</h1>
        <p>
          Every audit entry, as it is written, POSTed to one URL you choose: in order, at least
          once, signed with HMAC-SHA256 in <code>Limitplane-Signature</code>. A receiver that is
          down gets everything when it is back.
        </p>
      </header>
      {isAdmin ? (
        <AdminView />
      ) : (
        <section className="panel" aria-labelledby="webhook-heading">
          <h2 id="webhook-heading">Only admins see it</h2>
          <p className="muted" data-testid="read-only">
            The URL may carry the receiver&apos;s token, so only admins see and change the audit
            webhook (your role: {principal.role}). Its changes are in the{" "}
            <Link href={entityHistoryHref("audit-webhook", "audit-webhook")}>audit log</Link>.
          </p>
        </section>
      )}
    </>
  );
}

async function AdminView() {
  const deps = controlDeps();
  const [settings, deliveries, history] = await Promise.all([
    findAuditWebhookSettings(deps.db),
    listAuditWebhookDeliveries({ limit: DELIVERIES_SHOWN }, deps),
    listAuditEntries({ entityType: "audit-webhook", entityId: "audit-webhook", limit: 5 }, deps),
  ]);
  const isOn = settings.url !== null;
  return (
    <>
      <section className="panel" aria-labelledby="now-heading">
        <h2 id="now-heading">
          Now{" "}
          <Badge tone={isOn ? "ok" : "muted"} dot>
            {isOn ? "on" : "off"}
          </Badge>
        </h2>
        <dl className="facts" data-testid="webhook-now">
          <dt>Sends to</dt>
          <dd data-testid="webhook-url">
            {settings.url === null ? (
              <span className="muted">
                {settings.version === 0 ? "never set" : "nowhere: turned off"}
              </span>
            ) : (
              <code className="mono">{settings.url}</code>
            )}
          </dd>
          <dt>Signing secret</dt>
          <dd>
            {settings.hasSigningSecret
              ? "set (shown once, when it was made)"
              : "none yet: made with the first URL"}
          </dd>
          {settings.updatedAt !== null ? (
            <>
              <dt>Version</dt>
              <dd>
                {settings.version}, changed <LocalTime at={settings.updatedAt} relative />
              </dd>
            </>
          ) : null}
        </dl>
      </section>
      <section className="panel" aria-labelledby="change-heading">
        <h2 id="change-heading">{isOn ? "Change it" : "Set it"}</h2>
        <AuditWebhookForm
          url={settings.url}
          version={settings.version}
          hasSigningSecret={settings.hasSigningSecret}
        />
      </section>
      <DeliveriesPanel deliveries={deliveries} isOn={isOn} />
      <RecentChanges history={history} />
    </>
  );
}

function DeliveriesPanel({
  deliveries,
  isOn,
}: {
  deliveries: AuditWebhookDeliveries;
  isOn: boolean;
}) {
  return (
    <section
      className="panel"
      aria-labelledby="deliveries-heading"
      data-testid="webhook-deliveries"
    >
      <h2 id="deliveries-heading">Latest deliveries</h2>
      {deliveries.deliveries.length === 0 ? (
        <EmptyState title="Nothing sent yet">
          {isOn
            ? "The next audit entry is queued here, and the worker sends it within a second."
            : "Once a URL is set, each new audit entry is queued here and sent in order."}
        </EmptyState>
      ) : (
        <>
          <p data-testid="webhook-waiting">
            {deliveries.waiting === 0
              ? "Every queued entry was taken by the receiver."
              : `${formatNumber(deliveries.waiting)} ${deliveries.waiting === 1 ? "entry waits" : "entries wait"} to be sent, oldest first; the ones behind a failure wait for it.`}
          </p>
          <ScrollRegion label="Latest deliveries">
            <table className="data">
              <thead>
                <tr>
                  <th scope="col">Entry</th>
                  <th scope="col">State</th>
                  <th scope="col">Queued</th>
                  <th scope="col">Attempts</th>
                  <th scope="col">Outcome</th>
                </tr>
              </thead>
              <tbody>
                {deliveries.deliveries.map((delivery) => (
                  <tr key={delivery.auditEntryId} data-testid="webhook-delivery">
                    <th scope="row">
                      <Link href={auditEntryHref(delivery.auditEntryId)}>
                        #{delivery.auditEntryId}
                      </Link>{" "}
                      {delivery.action === null ? null : <code>{delivery.action}</code>}
                    </th>
                    <td>
                      <Badge tone={STATE_WORDS[delivery.state].tone} dot>
                        {STATE_WORDS[delivery.state].words}
                      </Badge>
                    </td>
                    <td>
                      <LocalTime at={delivery.queuedAt} />
                    </td>
                    <td>{formatNumber(delivery.attempts)}</td>
                    <td>
                      {delivery.sentAt !== null ? (
                        <>
                          taken at <LocalTime at={delivery.sentAt} />
                        </>
                      ) : delivery.lastError !== null ? (
                        <>
                          {delivery.lastError}
                          {delivery.nextAttemptAt !== null ? (
                            <span className="muted small">
                              {" "}
                              (next try <LocalTime at={delivery.nextAttemptAt} />)
                            </span>
                          ) : null}
                        </>
                      ) : (
                        <span className="muted">not tried yet</span>
                      )}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </ScrollRegion>
        </>
      )}
    </section>
  );
}
