import Link from "next/link";
import { EmptyState } from "@/components/ui/empty-state";

export default function ChangeRequestNotFound() {
  return (
    <>
      <header className="page-header">
        <h1>Change request not found</h1>
      </header>
      <EmptyState
        title="No change request has this identifier"
        action={
          <Link className="button" href="/change-requests">
            See the queue
          </Link>
        }
      />
    </>
  );
}
