import { SkeletonTable } from "@/components/ui/skeleton";

export default function OverridesLoading() {
  return (
    <>
      <header className="page-header">
        <h1>Overrides</h1>
      </header>
      <section className="panel">
        <SkeletonTable rows={4} columns={6} label="Loading overrides" />
      </section>
    </>
  );
}
