import type { Metadata } from "next";
import { connection } from "next/server";
import { Suspense } from "react";
import { AutoRefresh } from "@/components/auto-refresh";
import { RedisTopologyPanel } from "@/components/fleet/redis-topology";
import { Badge } from "@/components/ui/badge";
import { ErrorState } from "@/components/ui/error-state";
import { LocalTime } from "@/components/ui/local-time";
import { ScrollRegion } from "@/components/ui/scroll-region";
import { listRegionFleets } from "@/lib/control/fleet/list-region-fleets";
import { regionFleetDeps } from "@/lib/server/composition";
import { type GatewaysStatus, type ServiceCheck, statusReport } from "@/lib/server/status";

export const metadata: Metadata = { title: "Status" };

export default function StatusPage() {
  return (
    <>
      <header className="page-header">
        <h1>Status</h1>
        <p>
          Whether the control plane can reach its database and Redis, whether every gateway runs a
          policy, which migrations are applied, and which build is running. <AutoRefresh />
        </p>
      </header>
      <Suspense fallback={<StatusSkeleton />}>
        <StatusPanels />
      </Suspense>
      <Suspense fallback={null}>
        <TopologyPanels />
      </Suspense>
    </>
  );
}

/** The Redis topology each region's gateways report in their heartbeats. */
async function TopologyPanels() {
  await connection();
  const fleets = await listRegionFleets(regionFleetDeps());
  return (
    <>
      {fleets.map((entry) =>
        entry.fleet === null ? (
          <ErrorState
            key={entry.region}
            title="The Redis topology could not be read"
            message="Gateways report it in their heartbeats in Redis, which did not answer."
          />
        ) : (
          <RedisTopologyPanel key={entry.region} reports={entry.fleet.enforcers} />
        ),
      )}
    </>
  );
}

function StatusSkeleton() {
  return (
    <div className="grid-2" role="status" aria-busy="true" aria-label="Checking services">
      {["Postgres", "Redis"].map((name) => (
        <section className="panel" key={name}>
          <h2>{name}</h2>
          <div className="skeleton" />
          <div className="skeleton" style={{ width: "60%" }} />
        </section>
      ))}
    </div>
  );
}

async function StatusPanels() {
  await connection();
  const report = await statusReport();
  return (
    <>
      <div className="grid-2">
        <ServicePanel name="Postgres" check={report.postgres} />
        <ServicePanel name="Redis" check={report.redis} />
      </div>
      <GatewaysPanel gateways={report.gateways} />
      <section className="panel" aria-labelledby="migrations-heading">
        <h2 id="migrations-heading">Migrations</h2>
        {report.migrations === null ? (
          <p className="muted">
            Unknown: the migration history cannot be read while Postgres is unreachable.
          </p>
        ) : (
          <>
            {report.migrations.pending.length > 0 && (
              <p>
                <span className="badge badge-warn">{report.migrations.pending.length} pending</span>{" "}
                Run <code>npm run db:deploy</code> to apply: {report.migrations.pending.join(", ")}
              </p>
            )}
            {report.migrations.applied.length === 0 ? (
              <div className="empty">No migration has been applied to this database yet.</div>
            ) : (
              <ScrollRegion label="Applied migrations">
                <table className="data">
                  <thead>
                    <tr>
                      <th>Migration</th>
                      <th>Applied</th>
                    </tr>
                  </thead>
                  <tbody>
                    {report.migrations.applied.map((migration) => (
                      <tr key={migration.name} data-testid="migration-row">
                        <td className="mono">{migration.name}</td>
                        <td>
                          {migration.appliedAt ? (
                            <LocalTime at={migration.appliedAt} />
                          ) : (
                            <span className="badge badge-bad">failed or in progress</span>
                          )}
                        </td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </ScrollRegion>
            )}
          </>
        )}
      </section>
      <section className="panel" aria-labelledby="build-heading">
        <h2 id="build-heading">Build</h2>
        <dl className="facts">
          <dt>Version</dt>
          <dd data-testid="build-version">{report.build.version}</dd>
          <dt>Commit</dt>
          <dd className="mono">{report.build.commit}</dd>
          <dt>Built</dt>
          <dd data-testid="build-built-at">
            {Number.isFinite(Date.parse(report.build.builtAt)) ? (
              <LocalTime at={report.build.builtAt} />
            ) : (
              report.build.builtAt
            )}
          </dd>
          <dt>Checked</dt>
          <dd data-testid="status-checked-at">
            <LocalTime at={report.checkedAt} />
          </dd>
        </dl>
      </section>
    </>
  );
}

function GatewaysPanel({ gateways }: { gateways: GatewaysStatus | null }) {
  const without = gateways?.withoutPolicy ?? [];
  const cached = gateways?.onCachedPolicy ?? [];
  return (
    <section className="panel" aria-labelledby="gateways-heading" data-testid="status-gateways">
      <h2 id="gateways-heading">
        Gateways{" "}
        {gateways === null ? (
          <Badge tone="warn">unknown</Badge>
        ) : without.length > 0 ? (
          <Badge tone="bad" dot>
            {without.length} without a policy
          </Badge>
        ) : cached.length > 0 ? (
          <Badge tone="warn" dot>
            {cached.length} on a cached policy
          </Badge>
        ) : (
          <Badge tone="ok" dot>
            {gateways.reporting === 0 ? "none reporting" : "every one runs a policy"}
          </Badge>
        )}
      </h2>
      {gateways === null ? (
        <p className="muted">Unknown: the gateways' heartbeats cannot be read from Redis.</p>
      ) : (
        <>
          <p>
            {gateways.reporting} reporting; published policy{" "}
            {gateways.publishedVersion === null ? (
              <strong>none under this key prefix</strong>
            ) : (
              <strong>v{gateways.publishedVersion}</strong>
            )}
            .
          </p>
          {without.length > 0 ? (
            <ul data-testid="status-no-policy">
              {without.map((gateway) => (
                <li key={gateway.id}>
                  <code>{gateway.id}</code>: no policy
                  {gateway.sinceMs !== null ? (
                    <>
                      {" "}
                      since <LocalTime at={gateway.sinceMs} />
                    </>
                  ) : null}
                  , {gateway.action === "reject" ? "refusing" : "admitting unchecked"} every request
                  ({gateway.decisions} so far)
                </li>
              ))}
            </ul>
          ) : null}
          {cached.length > 0 ? (
            <ul data-testid="status-cached-policy">
              {cached.map((gateway) => (
                <li key={gateway.id}>
                  <code>{gateway.id}</code>: policy cached (version {gateway.version ?? "?"}
                  {gateway.savedAtMs !== null ? (
                    <>
                      , saved at <LocalTime at={gateway.savedAtMs} />
                    </>
                  ) : null}
                  ), enforced until Redis gives it the live one
                </li>
              ))}
            </ul>
          ) : null}
        </>
      )}
    </section>
  );
}

function ServicePanel({ name, check }: { name: string; check: ServiceCheck }) {
  const slug = name.toLowerCase();
  return (
    <section className="panel" aria-labelledby={`${slug}-heading`} data-testid={`service-${slug}`}>
      <h2 id={`${slug}-heading`}>
        {name}{" "}
        {check.ok ? (
          <span className="badge badge-ok" data-testid={`${slug}-state`}>
            <span className="dot" /> Connected
          </span>
        ) : (
          <span className="badge badge-bad" data-testid={`${slug}-state`}>
            <span className="dot" /> Unreachable
          </span>
        )}
      </h2>
      <dl className="facts">
        <dt>Address</dt>
        <dd className="mono">{check.target}</dd>
        {check.ok ? (
          <>
            <dt>Version</dt>
            <dd>{check.version ?? "unknown"}</dd>
            <dt>Round trip</dt>
            <dd>{check.latencyMs === null ? "n/a" : `${check.latencyMs.toFixed(1)} ms`}</dd>
          </>
        ) : (
          <>
            <dt>Problem</dt>
            <dd>{check.error}</dd>
          </>
        )}
      </dl>
    </section>
  );
}
