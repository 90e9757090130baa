import { Skeleton, SkeletonTable } from "@/components/ui/skeleton";

export default function Loading() {
  return (
    <>
      <header className="page-header">
        <h1>Descriptor mappings</h1>
        <Skeleton lines={2} label="Loading the descriptor mappings" />
      </header>
      <section className="panel">
        <SkeletonTable rows={2} columns={8} label="Loading the descriptor mappings" />
      </section>
    </>
  );
}
