import type { Metadata } from "next";
import Link from "next/link";
import { EmptyState } from "@/components/ui/empty-state";

export const metadata: Metadata = { title: "Not found" };

/** Any address the console does not have. Outside the shell: it may be reached signed out. */
export default function NotFound() {
  return (
    <main className="sign-in">
      <div className="sign-in-card panel">
        <h1>Not found</h1>
        <EmptyState
          title="The console has no page at this address"
          action={<Link href="/">Go to the overview</Link>}
        >
          The link may be mistyped, or the page may have moved.
        </EmptyState>
      </div>
    </main>
  );
}
