import { Skeleton } from "@/components/ui/skeleton";

export default function AuditLoading() {
  return (
    <>
      <header className="page-header">
        <h1>Audit log</h1>
        <p>Who changed which limit, when, from what to what, and why.</p>
      </header>
      <section className="panel">
        <Skeleton lines={2} label="Loading filters" />
      </section>
      <section className="panel">
        <Skeleton lines={6} label="Loading audit entries" />
      </section>
    </>
  );
}
