import { Skeleton, SkeletonChart } from "@/components/ui/skeleton";

/** Only the overview's: the `(overview)` group keeps it from wrapping other console pages. */
export default function OverviewLoading() {
  return (
    <>
      <header className="page-header">
        <h1>Overview</h1>
        <p>
          Rejection rates per scope, the enforcer fleet and the policy version each runs, and what
          needs attention.
        </p>
      </header>
      <section className="panel">
        <h2>Alerts</h2>
        <Skeleton lines={2} label="Loading alerts" />
      </section>
      <section className="panel">
        <h2>Rejection rate by scope</h2>
        <SkeletonChart />
      </section>
      <section className="panel">
        <h2>Enforcers</h2>
        <Skeleton lines={3} label="Loading enforcers" />
      </section>
    </>
  );
}
