import { SkeletonTable } from "@/components/ui/skeleton";

export default function OutboundBudgetsLoading() {
  return (
    <>
      <header className="page-header">
        <h1>Outbound budgets</h1>
      </header>
      <section className="panel">
        <SkeletonTable rows={3} columns={7} label="Loading outbound budgets" />
      </section>
    </>
  );
}
