"use client";

import { RouteError } from "@/components/ui/route-error";

/** The descriptor mappings failed to load. The details are in the server log. */
export default function DescriptorMappingsError(props: {
  error: Error & { digest?: string };
  reset: () => void;
}) {
  return (
    <RouteError
      {...props}
      area="Descriptor mappings"
      title="The descriptor mappings could not be loaded"
      message="The database may be unreachable, or there is no policy yet; the status page says which. Try again in a moment."
    />
  );
}
