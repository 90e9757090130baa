import { descriptorRuleScope } from "@limitplane/enforcer/policy";
import type { Metadata } from "next";
import Link from "next/link";
import { notFound } from "next/navigation";
import { DryRunChart } from "@/components/charts/dry-run-chart";
import { RejectionChart } from "@/components/charts/rejection-chart";
import { EmptyState } from "@/components/ui/empty-state";
import { ErrorState } from "@/components/ui/error-state";
import { LocalTime } from "@/components/ui/local-time";
import { ScrollRegion } from "@/components/ui/scroll-region";
import { buildDryRunSeries, buildRejectionRateSeries, CHART_RANGES } from "@/lib/console";
import { can, type DescriptorRuleRecord, getDescriptorRule, isAppError } from "@/lib/control";
import { loadScopeMinutes } from "@/lib/control/metric-minute/load-scope-minutes";
import { clock, controlDeps, scopeMinutesDeps } from "@/lib/server/composition";
import { requirePrincipal } from "@/lib/server/current-principal";
import { describeRuleLimit, formatLevels } from "../_components/describe-rule-limit";
import { formatDescriptorLines } from "../_components/descriptor-lines";
import { DescriptorRaiseForm, RevertRaiseButton } from "../_components/descriptor-raise-form";
import { DescriptorRuleEditForm } from "../_components/descriptor-rule-edit-form";

export const metadata: Metadata = { title: "Descriptor rule" };

function describeRaise(raise: DescriptorRuleRecord["raises"][number]): string {
  return raise.factor !== null
    ? `${raise.factor}x the rule's limit`
    : raise.limit !== null
      ? describeRuleLimit(raise.limit)
      : "";
}

/**
 * The rule's decisions over the last hour, from the per-minute counts every service replica
 * reports under the rule's scope (`descriptor:<id>`), as the overview charts each scope: an
 * enforced rule's rejection rate, a shadow-mode rule's would-rejects, like a dry-run candidate's.
 */
async function RuleTraffic({ rule }: { rule: DescriptorRuleRecord }) {
  const range = CHART_RANGES["1h"];
  const nowMs = clock().nowMs();
  const scope = descriptorRuleScope(rule.id);
  const window = { nowMs, includeCurrentBucket: true };
  try {
    const minutes = await loadScopeMinutes(
      { fromMs: nowMs - range.rangeMs - range.bucketMs, nowMs, scopes: [scope] },
      scopeMinutesDeps(),
    );
    let allowed = 0;
    let rejected = 0;
    let wouldReject = 0;
    for (const row of minutes.rows) {
      allowed += row.allowed;
      rejected += row.rejected;
      wouldReject += row.wouldReject;
    }
    const requests = allowed + rejected + wouldReject;
    return (
      <div data-testid="rule-traffic">
        <p data-testid="rule-counts">
          {requests === 0
            ? "No decisions by this rule in the last hour."
            : `In the last hour: ${requests} decided, ${rejected} rejected${
                wouldReject > 0 || rule.mode === "dry-run"
                  ? `, ${wouldReject} would have been rejected (shadow mode)`
                  : ""
              }.`}
        </p>
        {rule.mode === "dry-run" ? (
          <DryRunChart
            title="Would-reject in shadow mode, per minute"
            data={buildDryRunSeries(minutes.rows, range, {
              ...window,
              pairs: [{ enforcedScope: scope, dryRunScope: scope, label: scope }],
            })}
          />
        ) : (
          <RejectionChart
            title={`Rejection rate of this rule, ${range.label.toLowerCase()}`}
            data={buildRejectionRateSeries(minutes.rows, range, { ...window, scopes: [scope] })}
          />
        )}
      </div>
    );
  } catch (error: unknown) {
    console.error("descriptor rule: the chart could not be built", error);
    return (
      <ErrorState
        title="The chart could not be drawn"
        message="The per-minute counts could not be read just now. Reload the page to try again."
        retryHref={`/descriptor-rules/${encodeURIComponent(rule.id)}`}
      />
    );
  }
}

export default async function DescriptorRulePage({ params }: { params: Promise<{ id: string }> }) {
  const { id } = await params;
  const principal = await requirePrincipal("policy.read", {
    next: `/descriptor-rules/${encodeURIComponent(id)}`,
  });
  let rule: DescriptorRuleRecord;
  try {
    rule = await getDescriptorRule(id, controlDeps());
  } catch (error: unknown) {
    if (isAppError(error) && error.code === "NOT_FOUND") notFound();
    throw error;
  }
  const nowMs = clock().nowMs();
  const raises = rule.raises.filter((raise) => Date.parse(raise.expiresAt) > nowMs);
  const canRaise = can(principal.role, "incident.write") && rule.limit !== "unlimited";
  const canEdit = can(principal.role, "descriptor-rule.write");
  return (
    <>
      <header className="page-header">
        <p className="small">
          <Link href="/descriptor-rules">Descriptor rules</Link>
        </p>
        <h1>
          {rule.domain}: <code>{formatLevels(rule.descriptor)}</code>
        </h1>
        <p data-testid="rule-summary">
          {describeRuleLimit(rule.limit)}, {rule.mode}
          {rule.wildcardCounter === "shared" ? ", wildcard values share one counter" : ""}. Version{" "}
          {rule.version}.
        </p>
      </header>
      <section className="panel" aria-labelledby="traffic-heading">
        <h2 id="traffic-heading">Decisions</h2>
        <RuleTraffic rule={rule} />
      </section>
      <section className="panel" aria-labelledby="raises-heading">
        <h2 id="raises-heading">Raises of one value</h2>
        <p className="muted small">
          An incident override for one value: it applies on the rule's counter for that value, other
          values keep the rule's limit, and it ends by itself.
        </p>
        {raises.length === 0 ? (
          <EmptyState title="No current raises">Nothing raised for this rule now.</EmptyState>
        ) : (
          <ScrollRegion label="Raises">
            <table className="data" data-testid="rule-raises">
              <thead>
                <tr>
                  <th scope="col">Value</th>
                  <th scope="col">Limit</th>
                  <th scope="col">From</th>
                  <th scope="col">Until</th>
                  <th scope="col">Owner, reason</th>
                  {canRaise ? <th scope="col">End it</th> : null}
                </tr>
              </thead>
              <tbody>
                {raises.map((raise) => (
                  <tr key={raise.id} data-testid={`raise-${raise.id}`}>
                    <td>
                      <code>{formatLevels(raise.descriptor)}</code>{" "}
                      <Link
                        className="small"
                        href={`/descriptor-rules/explain?${new URLSearchParams({
                          domain: rule.domain,
                          descriptors: formatDescriptorLines([raise.descriptor]),
                        })}`}
                      >
                        Explain
                      </Link>
                    </td>
                    <td>{describeRaise(raise)}</td>
                    <td>
                      <LocalTime at={raise.startsAt} />
                    </td>
                    <td>
                      <LocalTime at={raise.expiresAt} />
                    </td>
                    <td>
                      {raise.owner}: {raise.reason}
                    </td>
                    {canRaise ? (
                      <td>
                        <RevertRaiseButton
                          ruleId={rule.id}
                          raiseId={raise.id}
                          expectedVersion={rule.version}
                        />
                      </td>
                    ) : null}
                  </tr>
                ))}
              </tbody>
            </table>
          </ScrollRegion>
        )}
        {canRaise ? <DescriptorRaiseForm ruleId={rule.id} pattern={rule.descriptor} /> : null}
      </section>
      {canEdit ? (
        <section className="panel" aria-labelledby="edit-heading">
          <h2 id="edit-heading">Edit the rule</h2>
          <DescriptorRuleEditForm rule={rule} />
        </section>
      ) : null}
    </>
  );
}
