import type { Metadata } from "next";
import Link from "next/link";
import { notFound } from "next/navigation";
import { EmptyState } from "@/components/ui/empty-state";
import { LocalTime } from "@/components/ui/local-time";
import { ScrollRegion } from "@/components/ui/scroll-region";
import { can, type DescriptorRuleRecord, getDescriptorRule, isAppError } from "@/lib/control";
import { clock, controlDeps } from "@/lib/server/composition";
import { requirePrincipal } from "@/lib/server/current-principal";
import { describeRuleLimit, formatLevels } from "../_components/describe-rule-limit";
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
                      <code>{formatLevels(raise.descriptor)}</code>
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
          <DescriptorRuleEditForm key={rule.version} rule={rule} />
        </section>
      ) : null}
    </>
  );
}
