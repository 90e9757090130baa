import Link from "next/link";
import { EmptyState } from "@/components/ui/empty-state";

export default function NotFound() {
  return (
    <EmptyState
      title="No such tier or endpoint class"
      action={<Link href="/policies">Back to policies</Link>}
    >
      It may have been renamed or deleted since the link was made.
    </EmptyState>
  );
}
