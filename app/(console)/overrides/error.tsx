"use client";

import { RouteError } from "@/components/ops/route-error";

export default function OverridesError(props: {
  error: Error & { digest?: string };
  reset: () => void;
}) {
  return <RouteError area="Overrides" {...props} />;
}
