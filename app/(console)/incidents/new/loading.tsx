import { Skeleton } from "@/components/ui/skeleton";

export default function NewIncidentLoading() {
  return (
    <>
      <header className="page-header">
        <h1>Raise a limit (incident)</h1>
      </header>
      <section className="panel">
        <Skeleton lines={6} label="Loading the customer's limits" />
      </section>
    </>
  );
}
