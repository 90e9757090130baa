import { isName } from "@limitplane/enforcer/policy";
import type { Metadata } from "next";
import Link from "next/link";
import { notFound } from "next/navigation";
import { LocalTime } from "@/components/ui/local-time";
import { can, getTier, isAppError, listAuditEntries } from "@/lib/control";
import { controlDeps } from "@/lib/server/composition";
import { requirePrincipal } from "@/lib/server/current-principal";
import { DeleteEntityForm } from "../../_components/delete-entity-form";
import { LimitCell } from "../../_components/limit-cell";
import { RecentChanges } from "../../_components/recent-changes";
import { TierEditForm } from "./tier-edit-form";

export const metadata: Metadata = { title: "Tier" };

export default async function TierPage({ params }: { params: Promise<{ name: string }> }) {
  const { name } = await params;
  const principal = await requirePrincipal("policy.read", {
    next: `/policies/tiers/${encodeURIComponent(name)}`,
  });
  if (!isName(name)) notFound();
  const tier = await getTier(name, controlDeps()).catch((error: unknown) => {
    if (isAppError(error) && error.code === "NOT_FOUND") return null;
    throw error;
  });
  if (tier === null) notFound();
  const history = can(principal.role, "audit.read")
    ? await listAuditEntries({ entityType: "tier", entityId: name, limit: 5 }, controlDeps())
    : null;
  const canEdit = can(principal.role, "tier.write");

  return (
    <>
      <header className="page-header">
        <p className="small">
          <Link href="/policies">← Policies</Link>
        </p>
        <h1>
          Tier {tier.displayName ?? tier.name} <code className="muted small">tier:{tier.name}</code>
        </h1>
        <p>
          The account limit every customer of this tier starts from, for all endpoints together. A
          customer override replaces it for that customer; the ceilings still apply on top.
        </p>
      </header>
      <section className="panel" aria-labelledby="current-heading">
        <h2 id="current-heading">In force now</h2>
        <dl className="facts">
          <dt>Account limit</dt>
          <dd data-testid="current-limit">
            <LimitCell limit={tier.limit} />
          </dd>
          <dt>Version</dt>
          <dd>
            {tier.version}, changed <LocalTime at={tier.updatedAt} relative />
          </dd>
        </dl>
      </section>
      <section className="panel" aria-labelledby="edit-heading">
        <h2 id="edit-heading">{canEdit ? "Change the limit" : "Changing it"}</h2>
        {canEdit ? (
          <>
            <p className="small muted">
              Not sure? Try it on real traffic first as a{" "}
              <Link href={`/dry-run?target=${encodeURIComponent(`tier:${tier.name}`)}`}>
                dry-run candidate
              </Link>
              : it counts what it would block and rejects nothing.
            </p>
            <TierEditForm name={tier.name} version={tier.version} limit={tier.limit} />
          </>
        ) : (
          <p className="muted" data-testid="read-only">
            Only admins can change a tier&apos;s limit (your role: {principal.role}). To try a
            stricter limit on real traffic first, an operator can create a{" "}
            <Link href={`/dry-run?target=${encodeURIComponent(`tier:${tier.name}`)}`}>
              dry-run candidate
            </Link>
            .
          </p>
        )}
      </section>
      {canEdit ? (
        <section className="panel" aria-labelledby="delete-heading">
          <h2 id="delete-heading">Delete this tier</h2>
          <p className="small muted">
            Refused while any customer, endpoint class limit, default or dry-run candidate refers to
            it: the preview names them.
          </p>
          <DeleteEntityForm kind="tier" name={tier.name} version={tier.version} />
        </section>
      ) : null}
      {history !== null ? <RecentChanges history={history} /> : null}
    </>
  );
}
