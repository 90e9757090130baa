"use client";

import { RouteError } from "@/components/ui/route-error";

export default function ChangeRequestsError(props: {
  error: Error & { digest?: string };
  reset: () => void;
}) {
  return <RouteError area="Approvals" {...props} />;
}
