import Link from "next/link";
import { EmptyState } from "@/components/ui/empty-state";

export default function NotFound() {
  return (
    <EmptyState
      title="No such dry-run candidate"
      action={<Link href="/dry-run">Back to the dry-run list</Link>}
    >
      It may have been promoted or discarded since the link was made: the audit log has what
      happened.
    </EmptyState>
  );
}
