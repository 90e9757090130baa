import type { Metadata } from "next";
import Link from "next/link";
import { notFound } from "next/navigation";
import { can, getOutboundBudget, isAppError, type OutboundBudgetRecord } from "@/lib/control";
import { controlDeps } from "@/lib/server/composition";
import { requirePrincipal } from "@/lib/server/current-principal";
import { describeRuleLimit } from "../../descriptor-rules/_components/describe-rule-limit";
import { DeleteOutboundBudget } from "../_components/delete-outbound-budget";
import { OutboundBudgetForm } from "../_components/outbound-budget-form";

export const metadata: Metadata = { title: "Outbound budget" };

export default async function OutboundBudgetPage({
  params,
}: {
  params: Promise<{ name: string }>;
}) {
  const { name } = await params;
  const principal = await requirePrincipal("policy.read", {
    next: `/outbound-budgets/${encodeURIComponent(name)}`,
  });
  let budget: OutboundBudgetRecord;
  try {
    budget = await getOutboundBudget(name, controlDeps());
  } catch (error: unknown) {
    if (isAppError(error) && error.code === "NOT_FOUND") notFound();
    throw error;
  }
  const canWrite = can(principal.role, "outbound-budget.write");
  return (
    <>
      <header className="page-header">
        <p>
          <Link href="/outbound-budgets">Outbound budgets</Link>
        </p>
        <h1>
          <code>outbound:{budget.name}</code>
        </h1>
        {budget.displayName === null ? null : <p>{budget.displayName}</p>}
      </header>
      <section className="panel" aria-labelledby="budget-heading">
        <h2 id="budget-heading">In force</h2>
        <dl data-testid="budget-summary">
          <dt>Limit</dt>
          <dd>{budget.limit === null ? "none" : describeRuleLimit(budget.limit)}</dd>
          <dt>In flight</dt>
          <dd>
            {budget.concurrency === null
              ? "no cap"
              : `at most ${budget.concurrency.max}, a slot lapsing ${budget.concurrency.slotTtlMs} ms after its last renewal`}
          </dd>
          <dt>Longest wait</dt>
          <dd>{budget.maxWaitMs} ms</dd>
          <dt>Key</dt>
          <dd>{budget.keyBy}</dd>
          <dt>Version</dt>
          <dd>{budget.version}</dd>
        </dl>
      </section>
      {canWrite ? (
        <>
          <section className="panel" aria-labelledby="edit-heading">
            <h2 id="edit-heading">Edit</h2>
            <OutboundBudgetForm key={budget.version} budget={budget} />
          </section>
          <section className="panel" aria-labelledby="delete-heading">
            <h2 id="delete-heading">Delete</h2>
            <DeleteOutboundBudget name={budget.name} version={budget.version} />
          </section>
        </>
      ) : null}
    </>
  );
}
