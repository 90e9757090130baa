import type { Metadata } from "next";
import Link from "next/link";
import { EmptyState } from "@/components/ui/empty-state";
import { LocalTime } from "@/components/ui/local-time";
import { formatNumber } from "@/lib/console";
import {
  can,
  getCurrentSnapshot,
  getPolicySettings,
  isAppError,
  listCandidates,
  listEndpointClasses,
  listTiers,
} from "@/lib/control";
import { controlDeps } from "@/lib/server/composition";
import { requirePrincipal } from "@/lib/server/current-principal";
import { LimitCell } from "./_components/limit-cell";
import { RolloutLine } from "./_components/rollout-line";
import styles from "./policies.module.css";

export const metadata: Metadata = { title: "Policies" };

export default async function PoliciesPage() {
  const principal = await requirePrincipal("policy.read", { next: "/policies" });
  const [tiers, endpointClasses, settings, candidates, current] = await Promise.all([
    listTiers(controlDeps()),
    listEndpointClasses(controlDeps()),
    getPolicySettings(controlDeps()).catch((error: unknown) => {
      if (isAppError(error) && error.code === "NOT_FOUND") return null;
      throw error;
    }),
    listCandidates(controlDeps()),
    getCurrentSnapshot(controlDeps()).catch((error: unknown) => {
      if (isAppError(error)) return null;
      throw error;
    }),
  ]);
  const canEditTiers = can(principal.role, "tier.write");
  const canEditClasses = can(principal.role, "endpoint-class.write");
  const canEditSettings = can(principal.role, "settings.write");
  const candidateCount = (scope: string) =>
    candidates.filter((candidate) => candidate.target === scope).length;

  return (
    <>
      <header className="page-header">
        <h1>Policies</h1>
        <p>
          The limits every request is checked against: a tier&apos;s limit for its customers, the
          endpoint classes with their own limits and costs, and the ceilings that always apply on
          top.{" "}
          {canEditTiers
            ? "Open one to change it; you will see what changes before saving."
            : "Only admins can change them; you can open each to read it in full."}
        </p>
        {current === null ? (
          <p className="muted">No policy version has been published yet.</p>
        ) : (
          <p data-testid="policy-version">
            Published policy version <strong>{current.version}</strong>, made{" "}
            <LocalTime at={current.createdAt} relative />
            {current.publishedAt === null ? " (waiting for the publisher)" : ""}.{" "}
            <RolloutLine version={current.version} />
          </p>
        )}
      </header>

      <section className="panel" aria-labelledby="ceilings-heading">
        <h2 id="ceilings-heading">Ceilings</h2>
        <p className="muted small">
          Protection that applies whatever the tier; no customer override replaces it.
        </p>
        {settings === null ? (
          <EmptyState title="No settings yet">Import or seed a policy first.</EmptyState>
        ) : (
          <div className={styles.tableWrap}>
            <table className="data">
              <thead>
                <tr>
                  <th scope="col">Ceiling</th>
                  <th scope="col">Limit</th>
                  <th scope="col">
                    <span className="visually-hidden">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                <tr>
                  <th scope="row">
                    Per customer <code>ceiling</code>
                  </th>
                  <td>
                    <LimitCell limit={settings.ceilings.perCustomer} />
                  </td>
                  <td>
                    <Link href="/policies/settings">{canEditSettings ? "Edit" : "View"}</Link>
                  </td>
                </tr>
                <tr>
                  <th scope="row">
                    Per anonymous address <code>address</code>
                  </th>
                  <td>
                    <LimitCell limit={settings.ceilings.perAddress} />
                  </td>
                  <td>
                    <Link href="/policies/settings">{canEditSettings ? "Edit" : "View"}</Link>
                  </td>
                </tr>
              </tbody>
            </table>
          </div>
        )}
        {settings !== null ? (
          <p className="small">
            Unknown or missing tier: <code>{settings.defaultTier}</code>. Requests no rule matches:{" "}
            <code>{settings.defaultEndpointClass}</code>.
          </p>
        ) : null}
        <p className="small">
          <Link href="/policies/safe-changes">Approvals and the staged change guard</Link>: which
          changes need a second person, and when a staged change reverts by itself.
        </p>
      </section>

      <section className="panel" aria-labelledby="tiers-heading">
        <h2 id="tiers-heading">Tiers</h2>
        {canEditTiers ? (
          <p className="small">
            <Link href="/policies/tiers/new">New tier</Link>
          </p>
        ) : null}
        {tiers.length === 0 ? (
          <EmptyState title="No tiers">A policy needs at least one tier.</EmptyState>
        ) : (
          <div className={styles.tableWrap}>
            <table className="data" data-testid="tiers-table">
              <thead>
                <tr>
                  <th scope="col">Tier</th>
                  <th scope="col">Account limit (all endpoints)</th>
                  <th scope="col" className={styles.hideOnPhone}>
                    Dry-run
                  </th>
                  <th scope="col">
                    <span className="visually-hidden">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {tiers.map((tier) => (
                  <tr key={tier.name} data-testid={`tier-row-${tier.name}`}>
                    <th scope="row">
                      {tier.displayName ?? tier.name}
                      <br />
                      <code className="muted small">tier:{tier.name}</code>
                    </th>
                    <td>
                      <LimitCell limit={tier.limit} />
                    </td>
                    <td className={styles.hideOnPhone}>
                      {candidateCount(`tier:${tier.name}`) > 0 ? (
                        <Link href="/dry-run">
                          {formatNumber(candidateCount(`tier:${tier.name}`))} candidate
                          {candidateCount(`tier:${tier.name}`) === 1 ? "" : "s"}
                        </Link>
                      ) : (
                        <span className="muted">—</span>
                      )}
                    </td>
                    <td>
                      <Link
                        href={`/policies/tiers/${encodeURIComponent(tier.name)}`}
                        aria-label={`${canEditTiers ? "Edit" : "View"} tier ${tier.name}`}
                      >
                        {canEditTiers ? "Edit" : "View"}
                      </Link>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </section>

      <section className="panel" aria-labelledby="classes-heading">
        <h2 id="classes-heading">Endpoint classes</h2>
        {canEditClasses ? (
          <p className="small">
            <Link href="/policies/endpoint-classes/new">New endpoint class</Link>
          </p>
        ) : null}
        <p className="muted small">
          Groups of endpoints with a cost per request and, optionally, their own limit per tier, a
          limit for anonymous callers and a ceiling.
        </p>
        {endpointClasses.length === 0 ? (
          <EmptyState title="No endpoint classes">A policy needs at least one class.</EmptyState>
        ) : (
          <ul className={styles.classList}>
            {endpointClasses.map((endpointClass) => {
              const tierLimits = Object.entries(endpointClass.limits).sort(([a], [b]) =>
                a < b ? -1 : a > b ? 1 : 0,
              );
              return (
                <li
                  key={endpointClass.name}
                  className={styles.classCard}
                  data-testid={`class-${endpointClass.name}`}
                >
                  <div className={styles.classHead}>
                    <h3>
                      {endpointClass.displayName ?? endpointClass.name}{" "}
                      <code className="muted small">{endpointClass.name}</code>
                    </h3>
                    <Link
                      href={`/policies/endpoint-classes/${encodeURIComponent(endpointClass.name)}`}
                      aria-label={`${canEditClasses ? "Edit" : "View"} endpoint class ${endpointClass.name}`}
                    >
                      {canEditClasses ? "Edit" : "View"}
                    </Link>
                  </div>
                  <dl className="facts">
                    <dt>Cost</dt>
                    <dd>
                      {endpointClass.cost === 0
                        ? "0: counted, never limited"
                        : `${formatNumber(endpointClass.cost)} per request`}
                    </dd>
                    <dt>Matches</dt>
                    <dd>
                      {endpointClass.match.length === 0 ? (
                        <span className="muted">
                          {settings?.defaultEndpointClass === endpointClass.name
                            ? "every request no other class matches"
                            : "only when a gateway names it"}
                        </span>
                      ) : (
                        endpointClass.match.map((rule) => (
                          <code key={`${rule.method} ${rule.path}`} className={styles.rule}>
                            {rule.method} {rule.path}
                          </code>
                        ))
                      )}
                    </dd>
                    {tierLimits.map(([tier, limit]) => (
                      <FactRow key={tier} label={`${tier} tier`}>
                        <LimitCell limit={limit} />
                      </FactRow>
                    ))}
                    {endpointClass.anonymousLimit !== null ? (
                      <FactRow label="Anonymous, per address">
                        <LimitCell limit={endpointClass.anonymousLimit} />
                      </FactRow>
                    ) : null}
                    {endpointClass.ceiling !== null ? (
                      <FactRow label="Ceiling">
                        <LimitCell limit={endpointClass.ceiling} />
                      </FactRow>
                    ) : null}
                  </dl>
                  {tierLimits.length === 0 &&
                  endpointClass.anonymousLimit === null &&
                  endpointClass.ceiling === null ? (
                    <p className="muted small">
                      No limits of its own: only the tier&apos;s account limit and the ceilings
                      apply.
                    </p>
                  ) : null}
                </li>
              );
            })}
          </ul>
        )}
      </section>
    </>
  );
}

function FactRow({ label, children }: { label: string; children: React.ReactNode }) {
  return (
    <>
      <dt>{label}</dt>
      <dd>{children}</dd>
    </>
  );
}
