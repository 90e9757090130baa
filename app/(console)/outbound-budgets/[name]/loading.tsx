import { Skeleton } from "@/components/ui/skeleton";

export default function OutboundBudgetLoading() {
  return (
    <>
      <header className="page-header">
        <Skeleton lines={2} label="Loading outbound budget" />
      </header>
      <section className="panel">
        <Skeleton lines={5} label="Loading the budget in force" />
      </section>
    </>
  );
}
