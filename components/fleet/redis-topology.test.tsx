import { renderToStaticMarkup } from "react-dom/server";
import { describe, expect, it } from "vitest";
import { buildFailoverMarkers } from "@/lib/console/chart-series";
import { groupTopologies, RedisTopologyPanel } from "./redis-topology";

const sentinel = (primary: string, failoversSeen = 0) => ({
  mode: "sentinel",
  primaries: [primary],
  replicas: ["10.0.0.2:6379", "10.0.0.3:6379"],
  sentinelName: "limitplane",
  failoversSeen,
});

describe("the Redis topology panel", () => {
  it("groups gateways by what they see, so a gateway left on the old primary stands out", () => {
    const reports = [
      { id: "gw-1", redisTopology: sentinel("10.0.0.2:6379", 1) },
      { id: "gw-2", redisTopology: sentinel("10.0.0.2:6379", 1) },
      { id: "gw-3", redisTopology: sentinel("10.0.0.1:6379") },
      { id: "gw-old", redisTopology: null },
    ];
    const { groups, unreported } = groupTopologies(reports);
    expect(groups.map((group) => [group.topology.primaries[0], group.enforcerIds])).toEqual([
      ["10.0.0.2:6379", ["gw-1", "gw-2"]],
      ["10.0.0.1:6379", ["gw-3"]],
    ]);
    expect(unreported).toBe(1);
    const html = renderToStaticMarkup(<RedisTopologyPanel reports={reports} />);
    expect(html).toContain("Redis behind Sentinel");
    expect(html).toContain("<code>limitplane</code>");
    expect(html).toContain("2 failovers");
    expect(html).toContain("1 gateway does not report a topology");
  });

  it("says so when no gateway reported one", () => {
    expect(renderToStaticMarkup(<RedisTopologyPanel reports={[]} />)).toContain(
      "No gateway has reported its Redis topology yet",
    );
  });
});

describe("buildFailoverMarkers", () => {
  it("marks the failovers inside the window, linked to the topology", () => {
    const markers = buildFailoverMarkers(
      [
        { atMs: 500, from: "a:1", to: "b:1" },
        { atMs: 1_500, from: "b:1", to: "a:1" },
        { atMs: 3_000, from: "a:1", to: "b:1" },
      ],
      { startMs: 1_000, endMs: 3_000 },
    );
    expect(markers).toEqual([
      {
        atMs: 1_500,
        auditEntryId: "failover:1500:a:1",
        action: "redis.failover",
        kind: "redis-failover",
        label: "Redis primary b:1 replaced by a:1",
        href: "/status#redis-topology",
      },
    ]);
  });
});
