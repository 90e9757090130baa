import { Skeleton } from "@/components/ui/skeleton";

export default function AuditWebhookLoading() {
  return (
    <>
      <header className="page-header">
        <h1>Audit webhook</h1>
        <p>Every audit entry, as it is written, POSTed to one URL you choose.</p>
      </header>
      <section className="panel">
        <Skeleton lines={3} label="Loading the audit webhook" />
      </section>
      <section className="panel">
        <Skeleton lines={4} label="Loading the latest deliveries" />
      </section>
    </>
  );
}
