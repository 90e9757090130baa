import { Skeleton, SkeletonTable } from "@/components/ui/skeleton";

export default function IncidentLoading() {
  return (
    <>
      <header className="page-header">
        <Skeleton lines={2} label="Loading incident" />
      </header>
      <section className="panel">
        <SkeletonTable rows={3} columns={4} label="Loading enforcers" />
      </section>
    </>
  );
}
