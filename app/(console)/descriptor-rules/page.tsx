import type { Metadata } from "next";
import { EmptyState } from "@/components/ui/empty-state";
import { ScrollRegion } from "@/components/ui/scroll-region";
import { can, type DescriptorRuleRecord, listDescriptorRules } from "@/lib/control";
import { controlDeps } from "@/lib/server/composition";
import { requirePrincipal } from "@/lib/server/current-principal";
import { EnvoyImportForm } from "./_components/envoy-import-form";

export const metadata: Metadata = { title: "Descriptor rules" };

function describeRuleLimit(limit: DescriptorRuleRecord["limit"]): string {
  if (limit === "unlimited") return "unlimited";
  if (limit === "deny") return "deny (0 requests)";
  switch (limit.algorithm) {
    case "fixed-window":
    case "sliding-log":
    case "sliding-window":
      return `${limit.limit} per ${limit.windowMs / 1000} s (${limit.algorithm})`;
    case "token-bucket":
      return `burst ${limit.capacity}, ${limit.refillPerSec}/s (token bucket)`;
    case "leaky-meter":
      return `burst ${limit.burst}, ${limit.drainPerSec}/s (leaky meter)`;
    default: {
      const unknown: never = limit;
      return JSON.stringify(unknown);
    }
  }
}

export default async function DescriptorRulesPage() {
  const principal = await requirePrincipal("policy.read", { next: "/descriptor-rules" });
  const rules = await listDescriptorRules(controlDeps());
  const canImport = can(principal.role, "policy.import");
  return (
    <>
      <header className="page-header">
        <h1>Descriptor rules</h1>
        <p>
          Limits the rate-limit service applies to Envoy descriptors (such as{" "}
          <code>generic_key=checkout</code>), matched as envoyproxy/ratelimit matches them: level by
          level, a key and value before a wildcard before the key alone.
        </p>
      </header>
      <section className="panel" aria-labelledby="rules-heading">
        <h2 id="rules-heading">Rules</h2>
        {rules.length === 0 ? (
          <EmptyState title="No descriptor rules">
            Import an envoyproxy/ratelimit file below, or add rules through the API.
          </EmptyState>
        ) : (
          <ScrollRegion label="Descriptor rules">
            <table className="data" data-testid="descriptor-rules">
              <thead>
                <tr>
                  <th scope="col">Domain</th>
                  <th scope="col">Descriptor</th>
                  <th scope="col">Limit</th>
                  <th scope="col">Mode</th>
                  <th scope="col">Name, replaces</th>
                  <th scope="col">Version</th>
                </tr>
              </thead>
              <tbody>
                {rules.map((rule) => (
                  <tr key={rule.id} data-testid={`rule-${rule.id}`}>
                    <td>{rule.domain}</td>
                    <td>
                      <code>
                        {rule.descriptor
                          .map((level) =>
                            level.value === null ? level.key : `${level.key}=${level.value}`,
                          )
                          .join(", ")}
                      </code>
                      {rule.wildcardCounter === "shared" ? " (shared counter)" : ""}
                    </td>
                    <td>{describeRuleLimit(rule.limit)}</td>
                    <td>{rule.mode}</td>
                    <td>
                      {rule.name ?? ""}
                      {rule.replaces.length > 0 ? ` replaces ${rule.replaces.join(", ")}` : ""}
                    </td>
                    <td>{rule.version}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </ScrollRegion>
        )}
      </section>
      {canImport ? (
        <section className="panel" aria-labelledby="import-heading">
          <h2 id="import-heading">Import envoyproxy/ratelimit configuration</h2>
          <p className="muted small">
            The file replaces every rule of the domain it names. Preview first: nothing is written
            until you import, and a file with any problem is refused whole.
          </p>
          <EnvoyImportForm />
        </section>
      ) : null}
    </>
  );
}
