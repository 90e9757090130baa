import type { Metadata } from "next";
import Link from "next/link";
import { EmptyState } from "@/components/ui/empty-state";
import { ScrollRegion } from "@/components/ui/scroll-region";
import { can, listDescriptorRules } from "@/lib/control";
import { controlDeps } from "@/lib/server/composition";
import { requirePrincipal } from "@/lib/server/current-principal";
import { describeRuleLimit, formatLevels } from "./_components/describe-rule-limit";
import { EnvoyImportForm } from "./_components/envoy-import-form";

export const metadata: Metadata = { title: "Descriptor rules" };

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
        <p>
          <Link href="/descriptor-rules/explain">Explain a call</Link>: which rule decides each
          descriptor, and what one more call would get now.
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
                      <Link href={`/descriptor-rules/${encodeURIComponent(rule.id)}`}>
                        <code>{formatLevels(rule.descriptor)}</code>
                      </Link>
                      {rule.wildcardCounter === "shared" ? " (shared counter)" : ""}
                    </td>
                    <td>
                      {describeRuleLimit(rule.limit)}
                      {rule.raises.length > 0 ? ` (${rule.raises.length} raise(s))` : ""}
                    </td>
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
