import type { LimitSpec } from "@limitplane/enforcer/limiter";
import type { Metadata } from "next";
import Link from "next/link";
import { notFound } from "next/navigation";
import { connection } from "next/server";
import { AutoRefresh } from "@/components/auto-refresh";
import { AuditHistory } from "@/components/ops/audit-history";
import { incidentBaseRule } from "@/components/ops/incident-scopes";
import styles from "@/components/ops/ops.module.css";
import { Badge, type BadgeTone } from "@/components/ui/badge";
import { Countdown } from "@/components/ui/countdown";
import { EmptyState } from "@/components/ui/empty-state";
import { LocalTime } from "@/components/ui/local-time";
import { ScrollRegion } from "@/components/ui/scroll-region";
import { formatFactor, formatLimit } from "@/lib/console";
import {
  explainLimits,
  getCurrentSnapshot,
  getIncident,
  getPolicySettings,
  type IncidentState,
  isAppError,
  listAuditEntries,
} from "@/lib/control";
import { can } from "@/lib/control/auth/roles";
import { type EnforcerRecord, listEnforcers } from "@/lib/control/fleet/list-enforcers";
import { clock, controlDeps, explainDeps, fleetDeps } from "@/lib/server/composition";
import { requirePrincipal } from "@/lib/server/current-principal";
import { IncidentActions } from "./incident-actions";

export const metadata: Metadata = { title: "Incident override" };

/** An enforcer silent for longer than this is not waited for (it beats every few seconds). */
const LIVE_HEARTBEAT_MS = 15_000;

const STATE_TONE: Record<IncidentState, BadgeTone> = {
  active: "ok",
  upcoming: "warn",
  expired: "muted",
  reverted: "muted",
};

export default async function IncidentPage({ params }: { params: Promise<{ id: string }> }) {
  const { id: rawId } = await params;
  const id = decodeURIComponent(rawId);
  const principal = await requirePrincipal("policy.read", {
    next: `/incidents/${encodeURIComponent(id)}`,
  });
  await connection();
  const serverNowMs = clock().nowMs();

  let incident: Awaited<ReturnType<typeof getIncident>>;
  try {
    incident = await getIncident(id, controlDeps(), serverNowMs);
  } catch (error: unknown) {
    if (isAppError(error) && (error.code === "NOT_FOUND" || error.code === "VALIDATION_FAILED")) {
      notFound();
    }
    throw error;
  }

  const [audit, fleet, limits] = await Promise.all([
    listAuditEntries({ entityType: "incident", entityId: id, limit: 50 }, controlDeps()),
    listEnforcers(fleetDeps(), { liveWithinMs: LIVE_HEARTBEAT_MS }).then(
      (fleet) => ({
        ok: true as const,
        enforcers: [...fleet.enforcers].sort((a, b) => (a.id < b.id ? -1 : 1)),
      }),
      (error: unknown) => ({
        ok: false as const,
        message: error instanceof Error ? error.message : "Redis did not answer",
      }),
    ),
    effectiveLimits(id, incident.customerId, incident.endpointClass),
  ]);
  // The latest change to this incident that produced a policy version: every enforcer must run at
  // least that version for the change (raise, extend or revert) to be in force everywhere.
  const ownVersion = audit.entries.reduce<number | null>(
    (max, entry) => (entry.policyVersion === null ? max : Math.max(max ?? 0, entry.policyVersion)),
    null,
  );
  // An incident that arrived with an imported policy (the seed, a restore) has no change of its
  // own: the current version carries it, so that is what each enforcer must run.
  const targetVersion =
    ownVersion ?? (await getCurrentSnapshot(controlDeps()).then((current) => current.version));
  const confirmed = fleet.ok
    ? fleet.enforcers.filter(
        (enforcer) =>
          targetVersion !== null && enforcer.version !== null && enforcer.version >= targetVersion,
      ).length
    : 0;
  const isAllConfirmed =
    fleet.ok && fleet.enforcers.length > 0 && confirmed === fleet.enforcers.length;
  const isCurrent = incident.state === "active" || incident.state === "upcoming";
  const scopeWords = incident.endpointClass ?? "all endpoints";
  const change =
    incident.factor !== null
      ? formatFactor(incident.factor)
      : incident.limit !== null
        ? formatLimit(incident.limit)
        : "";

  return (
    <>
      <header className="page-header">
        <p className="small">
          <Link href={`/customers/${encodeURIComponent(incident.customerId)}`}>
            ← {incident.customerId}
          </Link>{" "}
          · <Link href="/overrides">Overrides</Link>
        </p>
        <h1 className={styles.wrap}>
          Incident override <code>{incident.id}</code>{" "}
          <Badge tone={STATE_TONE[incident.state]} dot>
            {incident.state}
          </Badge>
        </h1>
        <p className={styles.summary} data-testid="incident-headline">
          {incident.customerId}: {scopeWords}{" "}
          {limits !== null && limits.before !== null && limits.after !== null
            ? `${formatLimit(limits.before)} → ${formatLimit(limits.after)}`
            : change}
          {isCurrent ? (
            <>
              {" "}
              · <Countdown expiresAt={incident.expiresAt} serverNowMs={serverNowMs} /> (until{" "}
              <LocalTime at={incident.expiresAt} />)
            </>
          ) : incident.state === "reverted" && incident.revokedAt !== null ? (
            <>
              {" "}
              · reverted <LocalTime at={incident.revokedAt} /> by {incident.revokedBy ?? "someone"}
            </>
          ) : (
            <>
              {" "}
              · ended <LocalTime at={incident.expiresAt} />
            </>
          )}
        </p>
      </header>

      <section className="panel" aria-labelledby="facts-heading">
        <h2 id="facts-heading">Details</h2>
        <dl className={`facts ${styles.facts}`}>
          <dt>Customer</dt>
          <dd>
            <Link href={`/customers/${encodeURIComponent(incident.customerId)}`}>
              <code>{incident.customerId}</code>
            </Link>
          </dd>
          <dt>Scope</dt>
          <dd>{scopeWords}</dd>
          <dt>Change</dt>
          <dd>{change}</dd>
          <dt>Starts</dt>
          <dd>
            <LocalTime at={incident.startsAt} />
          </dd>
          <dt>Expires</dt>
          <dd>
            <LocalTime at={incident.expiresAt} />
          </dd>
          <dt>Owner</dt>
          <dd>{incident.owner}</dd>
          <dt>Raised by</dt>
          <dd>{incident.createdBy}</dd>
          <dt>Reason</dt>
          <dd className={styles.reason}>{incident.reason}</dd>
          <dt>Ticket</dt>
          <dd>
            {incident.ticketUrl === null ? (
              <span className="muted">none</span>
            ) : (
              <a href={incident.ticketUrl} rel="noreferrer noopener" target="_blank">
                {incident.ticketUrl}
              </a>
            )}
          </dd>
        </dl>
      </section>

      {isCurrent && can(principal.role, "incident.write") ? (
        <IncidentActions
          incidentId={incident.id}
          expectedVersion={incident.version}
          expiresAt={incident.expiresAt}
          customerId={incident.customerId}
          scopeWords={scopeWords}
        />
      ) : null}

      <section className="panel" aria-labelledby="fleet-heading">
        <h2 id="fleet-heading">Enforcers</h2>
        <p>
          {
            <>
              {ownVersion === null ? (
                <>
                  This incident arrived with an imported policy, not a change of its own; the
                  current policy <strong>v{targetVersion}</strong> carries it.
                </>
              ) : (
                <>
                  The latest change to this incident is in policy <strong>v{targetVersion}</strong>.
                </>
              )}{" "}
              <span data-testid="confirmations">
                {fleet.ok ? `${confirmed} of ${fleet.enforcers.length} enforcers run it` : ""}
              </span>
              {isAllConfirmed ? (
                <>
                  {" "}
                  <Badge tone="ok" dot>
                    all confirmed
                  </Badge>
                </>
              ) : null}
            </>
          }{" "}
          {isAllConfirmed ? null : <AutoRefresh intervalMs={1_000} />}
        </p>
        {!fleet.ok ? (
          <p className="muted" role="status">
            The enforcers' heartbeats could not be read from Redis: {fleet.message}
          </p>
        ) : fleet.enforcers.length === 0 ? (
          <EmptyState title="No live enforcer">
            No enforcer has sent a heartbeat in the last 15 seconds.
          </EmptyState>
        ) : (
          <FleetTable enforcers={fleet.enforcers} targetVersion={targetVersion} />
        )}
      </section>

      <section className="panel" aria-labelledby="changes-heading">
        <h2 id="changes-heading">Changes to this incident</h2>
        {audit.entries.length === 0 ? (
          <EmptyState title="No changes of its own">
            It arrived with an imported policy; the import is in the audit log.
          </EmptyState>
        ) : (
          <AuditHistory entries={audit.entries} />
        )}
      </section>
    </>
  );
}

function FleetTable({
  enforcers,
  targetVersion,
}: {
  enforcers: readonly EnforcerRecord[];
  targetVersion: number | null;
}) {
  return (
    <ScrollRegion className={styles.tableScroll} label="Enforcers confirming">
      <table className="data">
        <thead>
          <tr>
            <th scope="col">Enforcer</th>
            <th scope="col">Policy version</th>
            <th scope="col">Applied</th>
            <th scope="col">Runs this change</th>
          </tr>
        </thead>
        <tbody>
          {enforcers.map((enforcer) => {
            const isConfirmed =
              targetVersion !== null &&
              enforcer.version !== null &&
              enforcer.version >= targetVersion;
            return (
              <tr
                key={enforcer.id}
                data-testid="enforcer-row"
                data-confirmed={isConfirmed ? "true" : "false"}
              >
                <td>
                  <code>{enforcer.id}</code>
                  <div className="muted small">{enforcer.host}</div>
                </td>
                <td>{enforcer.version === null ? "none yet" : `v${enforcer.version}`}</td>
                <td>
                  {enforcer.appliedAtMs === null ? (
                    <span className="muted">—</span>
                  ) : (
                    <LocalTime at={enforcer.appliedAtMs} relative />
                  )}
                  {enforcer.appliedVia !== null ? (
                    <div className="muted small">via {enforcer.appliedVia}</div>
                  ) : null}
                </td>
                <td>
                  {isConfirmed ? (
                    <span className={styles.tick}>
                      <span aria-hidden="true">✓</span> confirmed
                    </span>
                  ) : (
                    <span className={styles.waiting}>
                      <span aria-hidden="true">…</span> waiting
                    </span>
                  )}
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </ScrollRegion>
  );
}

/** While the incident applies: the limit it replaced and the one in force, from the trace. */
async function effectiveLimits(
  incidentId: string,
  customerId: string,
  endpointClass: string | null,
): Promise<{ before: LimitSpec | null; after: LimitSpec | null } | null> {
  try {
    const className =
      endpointClass ?? (await getPolicySettings(controlDeps())).defaultEndpointClass;
    const explanation = await explainLimits(
      { customerId, endpointClass: className },
      explainDeps(),
    );
    const layer = endpointClass === null ? "account" : "endpoint";
    const slot = explanation.trace.slots.find((candidate) => candidate.layer === layer);
    const incidentRule = slot?.rules.find((rule) => rule.scope === `incident:${incidentId}`);
    if (slot === undefined || incidentRule === undefined) return null;
    return { before: incidentBaseRule(slot)?.limit ?? null, after: incidentRule.limit };
  } catch (error: unknown) {
    if (isAppError(error)) return null;
    throw error;
  }
}
