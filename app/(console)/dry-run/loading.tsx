import { Skeleton, SkeletonTable } from "@/components/ui/skeleton";

export default function Loading() {
  return (
    <>
      <header className="page-header">
        <h1>Dry-run</h1>
        <Skeleton lines={2} label="Loading candidates" />
      </header>
      <section className="panel">
        <SkeletonTable rows={3} columns={3} label="Loading candidates" />
      </section>
    </>
  );
}
