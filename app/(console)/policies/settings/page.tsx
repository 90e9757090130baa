import type { Metadata } from "next";
import Link from "next/link";
import { LocalTime } from "@/components/ui/local-time";
import { formatDurationMs, formatFactor } from "@/lib/console";
import {
  can,
  getPolicySettings,
  listAuditEntries,
  listEndpointClasses,
  listTiers,
} from "@/lib/control";
import { controlDeps } from "@/lib/server/composition";
import { requirePrincipal } from "@/lib/server/current-principal";
import { LimitCell } from "../_components/limit-cell";
import { RecentChanges } from "../_components/recent-changes";
import { GuardrailsEditForm } from "./guardrails-edit-form";
import { SettingsEditForm } from "./settings-edit-form";

export const metadata: Metadata = { title: "Ceilings and defaults" };

export default async function SettingsPage() {
  const principal = await requirePrincipal("policy.read", { next: "/policies/settings" });
  const [settings, tiers, endpointClasses, history] = await Promise.all([
    getPolicySettings(controlDeps()),
    listTiers(controlDeps()),
    listEndpointClasses(controlDeps()),
    can(principal.role, "audit.read")
      ? listAuditEntries({ entityType: "settings", entityId: "settings", limit: 5 }, controlDeps())
      : null,
  ]);
  const canEdit = can(principal.role, "settings.write");
  return (
    <>
      <header className="page-header">
        <p className="small">
          <Link href="/policies">← Policies</Link>
        </p>
        <h1>Ceilings and defaults</h1>
        <p>
          The ceilings protect the service whatever a customer&apos;s tier or override: every
          request meets them. The defaults decide what a request with an unknown tier or an
          unmatched path gets.
        </p>
      </header>
      <section className="panel" aria-labelledby="current-heading">
        <h2 id="current-heading">In force now</h2>
        <dl className="facts" data-testid="current-settings">
          <dt>Per customer</dt>
          <dd data-testid="current-per-customer">
            <LimitCell limit={settings.ceilings.perCustomer} />
          </dd>
          <dt>Per anonymous address</dt>
          <dd data-testid="current-per-address">
            <LimitCell limit={settings.ceilings.perAddress} />
          </dd>
          <dt>Default tier</dt>
          <dd>
            <code>{settings.defaultTier}</code>
          </dd>
          <dt>Default endpoint class</dt>
          <dd>
            <code>{settings.defaultEndpointClass}</code>
          </dd>
          <dt>Incident guardrails</dt>
          <dd>
            factors up to {formatFactor(settings.guardrails.maxIncidentFactor)}, for at most{" "}
            {formatDurationMs(settings.guardrails.maxIncidentDurationMs)}
          </dd>
          <dt>Version</dt>
          <dd>
            {settings.version}, changed <LocalTime at={settings.updatedAt} relative />
          </dd>
        </dl>
      </section>
      <section className="panel" aria-labelledby="edit-heading">
        <h2 id="edit-heading">{canEdit ? "Change them" : "Changing them"}</h2>
        {canEdit ? (
          <SettingsEditForm
            version={settings.version}
            ceilings={settings.ceilings}
            defaultTier={settings.defaultTier}
            defaultEndpointClass={settings.defaultEndpointClass}
            tiers={tiers.map((tier) => tier.name)}
            endpointClasses={endpointClasses.map((endpointClass) => endpointClass.name)}
          />
        ) : (
          <p className="muted" data-testid="read-only">
            Only admins can change the ceilings and defaults (your role: {principal.role}).
          </p>
        )}
      </section>
      {canEdit ? (
        <section className="panel" aria-labelledby="guardrails-heading">
          <h2 id="guardrails-heading">Change the incident guardrails</h2>
          <GuardrailsEditForm version={settings.version} guardrails={settings.guardrails} />
        </section>
      ) : null}
      {history !== null ? <RecentChanges history={history} /> : null}
    </>
  );
}
