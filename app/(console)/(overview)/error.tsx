"use client";

import { RouteError } from "@/components/ui/route-error";

/** The overview failed as a whole (each panel handles its own read failures). */
export default function OverviewError(props: {
  error: Error & { digest?: string };
  reset: () => void;
}) {
  return (
    <RouteError
      {...props}
      area="Overview"
      title="The overview could not be shown"
      message="The control plane could not build this page just now, or your role may not read metrics. Try again; if it keeps failing, check the status page."
    />
  );
}
