import { Skeleton, SkeletonChart } from "@/components/ui/skeleton";

export default function Loading() {
  return (
    <>
      <header className="page-header">
        <h1>Dry-run candidate</h1>
        <Skeleton lines={2} label="Loading the candidate" />
      </header>
      <section className="panel">
        <SkeletonChart height={200} label="Loading its traffic" />
      </section>
    </>
  );
}
