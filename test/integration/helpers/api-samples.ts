import type { AnyEndpoint } from "@/lib/api/endpoint";
import type { ApiHarness } from "./api-harness";

/** A concrete path for an endpoint: existing entities where the example policy has them. */
export function samplePath(endpoint: AnyEndpoint, harness: ApiHarness): string {
  const path = endpoint.path;
  return path
    .replace("{name}", path.includes("/tiers/") ? "free" : "search")
    .replace("{endpointClass}", "reports")
    .replace("{raiseId}", "raise-sample")
    .replace("{id}", () => {
      if (path.includes("/customers/") || path.includes("/seen-customers/")) return "globex";
      if (path.includes("/operators/")) return harness.as("viewer").operatorId;
      if (path.includes("/tokens/")) return harness.as("viewer").tokenId;
      if (path.includes("/auth/sessions/")) return "ses_0000000000000000";
      if (path.includes("/incidents/")) return "inc-2025-06-02-acme";
      if (path.includes("/candidates/")) return "free-halved";
      if (path.includes("/change-requests/")) return "cr_0000000000000000";
      if (path.includes("/staged-changes/")) return "staged-sample";
      if (path.includes("/descriptor-rules/")) return "rule-sample";
      throw new Error(`no sample id for ${path}`);
    });
}
