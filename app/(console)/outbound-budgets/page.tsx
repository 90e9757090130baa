import { isOutboundRaiseActive } from "@limitplane/enforcer/policy";
import type { Metadata } from "next";
import Link from "next/link";
import { connection } from "next/server";
import { Badge } from "@/components/ui/badge";
import { EmptyState } from "@/components/ui/empty-state";
import { ScrollRegion } from "@/components/ui/scroll-region";
import { can, listOutboundBudgets } from "@/lib/control";
import { formatUtcClock } from "@/lib/control/format-words";
import { clock, controlDeps } from "@/lib/server/composition";
import { requirePrincipal } from "@/lib/server/current-principal";
import { describeRuleLimit } from "../descriptor-rules/_components/describe-rule-limit";
import { OutboundBudgetForm } from "./_components/outbound-budget-form";

export const metadata: Metadata = { title: "Outbound budgets" };

export default async function OutboundBudgetsPage() {
  const principal = await requirePrincipal("policy.read", { next: "/outbound-budgets" });
  await connection();
  const budgets = await listOutboundBudgets(controlDeps());
  const nowMs = clock().nowMs();
  const canWrite = can(principal.role, "outbound-budget.write");
  return (
    <>
      <header className="page-header">
        <h1>Outbound budgets</h1>
        <p>
          Limits on calls your workers make to a provider, a host or a channel (scope{" "}
          <code>outbound:&lt;name&gt;</code>). Callers wait for their turn instead of being
          rejected; a limiter that reads the policy applies a change on its next call.
        </p>
      </header>
      <section className="panel" aria-labelledby="budgets-heading">
        <h2 id="budgets-heading">Budgets</h2>
        {budgets.length === 0 ? (
          <EmptyState title="No outbound budgets">
            {canWrite ? "Create one below." : "An operator or an admin can create them."}
          </EmptyState>
        ) : (
          <ScrollRegion label="Outbound budgets">
            <table className="data" data-testid="outbound-budgets">
              <thead>
                <tr>
                  <th scope="col">Scope</th>
                  <th scope="col">Limit</th>
                  <th scope="col">In flight</th>
                  <th scope="col">Longest wait</th>
                  <th scope="col">Key</th>
                  <th scope="col">Raise</th>
                  <th scope="col">Version</th>
                </tr>
              </thead>
              <tbody>
                {budgets.map((budget) => (
                  <tr key={budget.name} data-testid={`budget-${budget.name}`}>
                    <td>
                      <Link href={`/outbound-budgets/${encodeURIComponent(budget.name)}`}>
                        <code>outbound:{budget.name}</code>
                      </Link>
                      {budget.displayName === null ? "" : ` ${budget.displayName}`}
                    </td>
                    <td>{budget.limit === null ? "none" : describeRuleLimit(budget.limit)}</td>
                    <td>
                      {budget.concurrency === null ? "no cap" : `at most ${budget.concurrency.max}`}
                    </td>
                    <td>{budget.maxWaitMs / 1000} s</td>
                    <td>{budget.keyBy}</td>
                    <td>
                      {budget.raise !== null && isOutboundRaiseActive(budget.raise, nowMs) ? (
                        <Badge tone="warn" title={`${budget.raise.owner}: ${budget.raise.reason}`}>
                          raised until {formatUtcClock(Date.parse(budget.raise.expiresAt), nowMs)}
                        </Badge>
                      ) : (
                        <span className="muted">none</span>
                      )}
                    </td>
                    <td>{budget.version}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </ScrollRegion>
        )}
      </section>
      {canWrite ? (
        <section className="panel" aria-labelledby="new-budget-heading">
          <h2 id="new-budget-heading">New budget</h2>
          <OutboundBudgetForm />
        </section>
      ) : null}
    </>
  );
}
