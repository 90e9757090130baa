"use client";

import { RouteError } from "@/components/ui/route-error";

export default function IncidentsError(props: {
  error: Error & { digest?: string };
  reset: () => void;
}) {
  return <RouteError area="Incident" {...props} />;
}
