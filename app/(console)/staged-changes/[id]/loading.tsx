import { Skeleton, SkeletonTable } from "@/components/ui/skeleton";

export default function StagedChangeLoading() {
  return (
    <>
      <header className="page-header">
        <Skeleton lines={2} label="Loading staged change" />
      </header>
      <section className="panel">
        <SkeletonTable rows={3} columns={4} label="Loading steps" />
      </section>
    </>
  );
}
