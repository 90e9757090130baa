import { isName } from "@limitplane/enforcer/policy";
import type { Metadata } from "next";
import Link from "next/link";
import { notFound } from "next/navigation";
import { LocalTime } from "@/components/ui/local-time";
import { formatNumber } from "@/lib/console";
import { can, getEndpointClass, isAppError, listAuditEntries, listTiers } from "@/lib/control";
import { controlDeps } from "@/lib/server/composition";
import { requirePrincipal } from "@/lib/server/current-principal";
import { DeleteEntityForm } from "../../_components/delete-entity-form";
import { LimitCell } from "../../_components/limit-cell";
import { RecentChanges } from "../../_components/recent-changes";
import { EndpointClassEditForm } from "./endpoint-class-edit-form";

export const metadata: Metadata = { title: "Endpoint class" };

export default async function EndpointClassPage({ params }: { params: Promise<{ name: string }> }) {
  const { name } = await params;
  const principal = await requirePrincipal("policy.read", {
    next: `/policies/endpoint-classes/${encodeURIComponent(name)}`,
  });
  if (!isName(name)) notFound();
  const endpointClass = await getEndpointClass(name, controlDeps()).catch((error: unknown) => {
    if (isAppError(error) && error.code === "NOT_FOUND") return null;
    throw error;
  });
  if (endpointClass === null) notFound();
  const [tiers, history] = await Promise.all([
    listTiers(controlDeps()),
    can(principal.role, "audit.read")
      ? listAuditEntries({ entityType: "endpoint-class", entityId: name, limit: 5 }, controlDeps())
      : null,
  ]);
  const canEdit = can(principal.role, "endpoint-class.write");
  const tierLimits = Object.entries(endpointClass.limits).sort(([a], [b]) =>
    a < b ? -1 : a > b ? 1 : 0,
  );

  return (
    <>
      <header className="page-header">
        <p className="small">
          <Link href="/policies">← Policies</Link>
        </p>
        <h1>
          Endpoint class {endpointClass.displayName ?? endpointClass.name}{" "}
          <code className="muted small">{endpointClass.name}</code>
        </h1>
        <p>
          A group of endpoints limited together: what each request costs, which requests belong to
          it, and any limits of its own per tier, for anonymous callers, and as a ceiling.
        </p>
      </header>
      <section className="panel" aria-labelledby="current-heading">
        <h2 id="current-heading">In force now</h2>
        <dl className="facts" data-testid="current-class">
          <dt>Cost</dt>
          <dd>{formatNumber(endpointClass.cost)} per request</dd>
          <dt>Matches</dt>
          <dd>
            {endpointClass.match.length === 0
              ? "no rules: gateways name it, or it is the default"
              : endpointClass.match.map((rule) => `${rule.method} ${rule.path}`).join(", ")}
          </dd>
          {tierLimits.map(([tier, limit]) => (
            <TierLimitRow key={tier} tier={tier} limit={limit} />
          ))}
          <dt>Anonymous</dt>
          <dd>
            <LimitCell limit={endpointClass.anonymousLimit} />
          </dd>
          <dt>Ceiling</dt>
          <dd>
            <LimitCell limit={endpointClass.ceiling} />
          </dd>
          <dt>Version</dt>
          <dd>
            {endpointClass.version}, changed <LocalTime at={endpointClass.updatedAt} relative />
          </dd>
        </dl>
      </section>
      <section className="panel" aria-labelledby="edit-heading">
        <h2 id="edit-heading">{canEdit ? "Change it" : "Changing it"}</h2>
        {canEdit ? (
          <EndpointClassEditForm
            endpointClass={endpointClass}
            version={endpointClass.version}
            tiers={tiers.map((tier) => tier.name)}
          />
        ) : (
          <p className="muted" data-testid="read-only">
            Only admins can change an endpoint class (your role: {principal.role}). Operators can
            try a new per-tier limit here first as a <Link href="/dry-run">dry-run candidate</Link>.
          </p>
        )}
      </section>
      {canEdit ? (
        <section className="panel" aria-labelledby="delete-heading">
          <h2 id="delete-heading">Delete this endpoint class</h2>
          <p className="small muted">
            Refused while it is the default class or any customer override, current incident or
            dry-run candidate refers to it: the preview names them.
          </p>
          <DeleteEntityForm
            kind="endpoint-class"
            name={endpointClass.name}
            version={endpointClass.version}
          />
        </section>
      ) : null}
      {history !== null ? <RecentChanges history={history} /> : null}
    </>
  );
}

function TierLimitRow({
  tier,
  limit,
}: {
  tier: string;
  limit: Parameters<typeof LimitCell>[0]["limit"];
}) {
  return (
    <>
      <dt>{tier} tier</dt>
      <dd>
        <LimitCell limit={limit} />
      </dd>
    </>
  );
}
