import type { EnforcerHeartbeat } from "@limitplane/enforcer/publication";
import { Badge } from "../ui/badge";
import { ScrollRegion } from "../ui/scroll-region";

type TopologyReport = Pick<EnforcerHeartbeat, "id" | "redisTopology">;

interface TopologyGroup {
  readonly key: string;
  readonly topology: NonNullable<EnforcerHeartbeat["redisTopology"]>;
  readonly enforcerIds: string[];
  readonly failoversSeen: number;
}

const MODE_WORDS: Record<string, string> = {
  single: "one Redis",
  sentinel: "Redis behind Sentinel",
  cluster: "Redis Cluster",
};

/** The gateways' reports grouped by the topology they see; most gateways first. */
export function groupTopologies(reports: readonly TopologyReport[]): {
  readonly groups: TopologyGroup[];
  readonly unreported: number;
} {
  const groups = new Map<string, TopologyGroup>();
  let unreported = 0;
  for (const report of reports) {
    const topology = report.redisTopology;
    if (topology === null) {
      unreported++;
      continue;
    }
    const key = [
      topology.mode,
      topology.sentinelName ?? "",
      topology.primaries.join(","),
      topology.replicas.join(","),
    ].join("|");
    const group = groups.get(key) ?? { key, topology, enforcerIds: [], failoversSeen: 0 };
    group.enforcerIds.push(report.id);
    groups.set(key, { ...group, failoversSeen: group.failoversSeen + topology.failoversSeen });
  }
  return {
    groups: [...groups.values()].sort((a, b) => b.enforcerIds.length - a.enforcerIds.length),
    unreported,
  };
}

/**
 * The Redis topology the gateways see: primary (a Cluster's masters), replicas, and for Sentinel
 * the master name. Gateways that disagree (one still on the old primary during a failover) show
 * as separate rows, which is the point: they should agree within seconds.
 */
export function RedisTopologyPanel({
  reports,
  isNested = false,
}: {
  reports: readonly TopologyReport[];
  /** Inside another panel (the overview's fleet): no panel of its own, a smaller heading. */
  isNested?: boolean;
}) {
  const { groups, unreported } = groupTopologies(reports);
  const Heading = isNested ? "h3" : "h2";
  return (
    <section
      className={isNested ? undefined : "panel"}
      aria-labelledby="redis-topology-heading"
      id="redis-topology"
    >
      <Heading id="redis-topology-heading">Redis topology the gateways see</Heading>
      {groups.length === 0 ? (
        <p className="muted">
          No gateway has reported its Redis topology yet (gateways report it with every heartbeat).
        </p>
      ) : (
        <ScrollRegion label="Redis topology">
          <table className="data" data-testid="redis-topology">
            <caption className="visually-hidden">
              Redis primaries and replicas, as each group of gateways sees them
            </caption>
            <thead>
              <tr>
                <th scope="col">Setup</th>
                <th scope="col">Primary</th>
                <th scope="col">Replicas</th>
                <th scope="col">Gateways</th>
              </tr>
            </thead>
            <tbody>
              {groups.map((group) => (
                <tr key={group.key} data-testid="redis-topology-row">
                  <td data-label="Setup">
                    {MODE_WORDS[group.topology.mode] ?? group.topology.mode}
                    {group.topology.sentinelName === null ? null : (
                      <>
                        {" "}
                        master <code>{group.topology.sentinelName}</code>
                      </>
                    )}
                  </td>
                  <td data-label="Primary">
                    {group.topology.primaries.map((primary) => (
                      <code key={primary} className="mono">
                        {primary}{" "}
                      </code>
                    ))}
                  </td>
                  <td data-label="Replicas">
                    {group.topology.replicas.length === 0 ? (
                      <Badge tone="warn">none</Badge>
                    ) : (
                      group.topology.replicas.map((replica) => (
                        <code key={replica} className="mono">
                          {replica}{" "}
                        </code>
                      ))
                    )}
                  </td>
                  <td data-label="Gateways">
                    {group.enforcerIds.length}
                    {group.failoversSeen > 0 ? (
                      <>
                        {" "}
                        <Badge tone="bad">
                          {group.failoversSeen}{" "}
                          {group.failoversSeen === 1 ? "failover" : "failovers"} seen
                        </Badge>
                      </>
                    ) : null}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </ScrollRegion>
      )}
      {unreported > 0 ? (
        <p className="muted small">
          {unreported} {unreported === 1 ? "gateway does" : "gateways do"} not report a topology (an
          older enforcer, or Redis not read yet).
        </p>
      ) : null}
    </section>
  );
}
