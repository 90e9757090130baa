"use client";

import { RouteError } from "@/components/ui/route-error";

export default function OutboundBudgetsError(props: {
  error: Error & { digest?: string };
  reset: () => void;
}) {
  return <RouteError area="Outbound budget" {...props} />;
}
