import type { Metadata } from "next";
import Link from "next/link";
import { EmptyState } from "@/components/ui/empty-state";
import { ScrollRegion } from "@/components/ui/scroll-region";
import { can, getDescriptorMappings } from "@/lib/control";
import { controlDeps } from "@/lib/server/composition";
import { requirePrincipal } from "@/lib/server/current-principal";
import { DescriptorMappingsForm } from "./_components/descriptor-mappings-form";

export const metadata: Metadata = { title: "Descriptor mappings" };

const NOT_MAPPED = "not mapped";

export default async function DescriptorMappingsPage() {
  const principal = await requirePrincipal("policy.read", { next: "/descriptor-mappings" });
  const record = await getDescriptorMappings(controlDeps());
  const canEdit = can(principal.role, "descriptor-rule.write");
  return (
    <>
      <header className="page-header">
        <h1>Descriptor mappings</h1>
        <p>
          Which entries of the descriptors Envoy sends the rate-limit service say who a request is,
          per domain: the customer, the tier, the method and path (so endpoint classes match), and
          the client address. Tiers, endpoint classes, ceilings, overrides and incidents then apply
          to Envoy traffic as to a Node gateway&apos;s. Descriptors matched by a{" "}
          <Link href="/descriptor-rules">descriptor rule</Link> are decided by the rule.
        </p>
      </header>
      <section className="panel" aria-labelledby="in-force-heading">
        <h2 id="in-force-heading">In force now</h2>
        {record.mappings === null ? (
          <p data-testid="mappings-default">
            None are stored, so every domain uses the default below (version {record.version}).
          </p>
        ) : (
          <p>Version {record.version}.</p>
        )}
        {record.effective.length === 0 ? (
          <EmptyState title="No domain is mapped">
            Only descriptor rules decide Envoy&apos;s descriptors; every other descriptor is
            answered OK and counted as uncovered. Add a domain below, or reset to the default.
          </EmptyState>
        ) : (
          <ScrollRegion label="Descriptor mappings in force">
            <table className="data" data-testid="descriptor-mappings">
              <thead>
                <tr>
                  <th scope="col">Domain</th>
                  <th scope="col">Customer</th>
                  <th scope="col">Tier</th>
                  <th scope="col">Method</th>
                  <th scope="col">Path</th>
                  <th scope="col">Endpoint class</th>
                  <th scope="col">Client address</th>
                  <th scope="col">Limit override</th>
                </tr>
              </thead>
              <tbody>
                {record.effective.map((mapping) => (
                  <tr key={mapping.domain} data-testid={`mapping-${mapping.domain}`}>
                    <td>
                      <code>{mapping.domain}</code>
                      {mapping.domain === "*" ? " (every other domain)" : ""}
                    </td>
                    {[
                      mapping.customer,
                      mapping.tier,
                      mapping.method,
                      mapping.path,
                      mapping.endpointClass,
                      mapping.clientAddress,
                    ].map((key, index) => (
                      // biome-ignore lint/suspicious/noArrayIndexKey: the columns are fixed
                      <td key={index}>{key === null ? NOT_MAPPED : <code>{key}</code>}</td>
                    ))}
                    <td>{mapping.limitOverride === "apply" ? "applied" : "ignored"}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </ScrollRegion>
        )}
      </section>
      {canEdit ? (
        <section className="panel" aria-labelledby="edit-heading">
          <h2 id="edit-heading">Change the mappings</h2>
          <p className="small">
            An empty entry key means the entry is not mapped. <code>*</code> covers every domain no
            other row names. Applying a descriptor&apos;s own limit lets whoever edits Envoy&apos;s
            routes set limits this console does not show, so it is off by default.
          </p>
          <DescriptorMappingsForm
            initial={record.effective}
            expectedVersion={record.version}
            isDefault={record.mappings === null}
          />
        </section>
      ) : null}
    </>
  );
}
