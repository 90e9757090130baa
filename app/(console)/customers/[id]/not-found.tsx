import Link from "next/link";
import { EmptyState } from "@/components/ui/empty-state";

export default function CustomerNotFound() {
  return (
    <>
      <header className="page-header">
        <h1>Customer not found</h1>
      </header>
      <EmptyState
        title="No customer has this identifier"
        action={
          <Link className="button" href="/customers">
            Search customers
          </Link>
        }
      >
        It may have been deleted, or the link is mistyped. Identifiers are case-sensitive.
      </EmptyState>
    </>
  );
}
