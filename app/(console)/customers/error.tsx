"use client";

import { RouteError } from "@/components/ui/route-error";

export default function CustomersError(props: {
  error: Error & { digest?: string };
  reset: () => void;
}) {
  return <RouteError area="Customers" {...props} />;
}
