import { Skeleton, SkeletonTable } from "@/components/ui/skeleton";

export default function Loading() {
  return (
    <>
      <header className="page-header">
        <h1>Policies</h1>
        <Skeleton lines={2} label="Loading the policy" />
      </header>
      <section className="panel">
        <SkeletonTable rows={3} columns={3} label="Loading tiers" />
      </section>
    </>
  );
}
