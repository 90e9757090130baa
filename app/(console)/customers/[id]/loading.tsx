import { Skeleton, SkeletonTable } from "@/components/ui/skeleton";

export default function CustomerLoading() {
  return (
    <>
      <header className="page-header">
        <Skeleton lines={2} label="Loading customer" />
      </header>
      <section className="panel">
        <SkeletonTable rows={6} columns={5} label="Loading limits" />
      </section>
    </>
  );
}
