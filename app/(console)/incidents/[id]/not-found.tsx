import Link from "next/link";
import { EmptyState } from "@/components/ui/empty-state";

export default function IncidentNotFound() {
  return (
    <>
      <header className="page-header">
        <h1>Incident not found</h1>
      </header>
      <EmptyState
        title="No incident override has this identifier"
        action={
          <Link className="button" href="/overrides">
            See overrides
          </Link>
        }
      />
    </>
  );
}
