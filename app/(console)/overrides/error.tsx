"use client";

import { RouteError } from "@/components/ui/route-error";

export default function OverridesError(props: {
  error: Error & { digest?: string };
  reset: () => void;
}) {
  return <RouteError area="Overrides" {...props} />;
}
