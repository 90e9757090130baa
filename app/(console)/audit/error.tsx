"use client";

import { RouteError } from "@/components/ui/route-error";

/** The audit log could not be read (the database is unreachable, or the role may not read it). */
export default function AuditError(props: {
  error: Error & { digest?: string };
  reset: () => void;
}) {
  return (
    <RouteError
      {...props}
      area="Audit log"
      title="The audit log could not be shown"
      message="The control plane could not read the audit log just now, or your role may not read it. Try again; if it keeps failing, check the status page."
    />
  );
}
