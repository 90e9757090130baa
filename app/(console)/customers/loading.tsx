import { SkeletonTable } from "@/components/ui/skeleton";

export default function CustomersLoading() {
  return (
    <>
      <header className="page-header">
        <h1>Customers</h1>
      </header>
      <section className="panel">
        <SkeletonTable rows={8} columns={3} label="Loading customers" />
      </section>
    </>
  );
}
