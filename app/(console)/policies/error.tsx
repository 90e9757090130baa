"use client";

import { RouteError } from "@/components/ui/route-error";

/** Anything below /policies that failed to load. The details are in the server log. */
export default function PoliciesError(props: {
  error: Error & { digest?: string };
  reset: () => void;
}) {
  return (
    <RouteError
      {...props}
      area="Policies"
      title="The policy could not be loaded"
      message="The database or Redis may be unreachable; the status page says which. Try again in a moment."
    />
  );
}
