import type { Metadata } from "next";
import Link from "next/link";
import { connection } from "next/server";
import styles from "@/components/ops/ops.module.css";
import { type PageSearchParams, singleParam } from "@/components/ops/search-params";
import { Badge, type BadgeTone } from "@/components/ui/badge";
import { ScrollRegion } from "@/components/ui/scroll-region";
import { type DescriptorsExplanation, explainDescriptors, isAppError } from "@/lib/control";
import { explainDeps } from "@/lib/server/composition";
import { requirePrincipal } from "@/lib/server/current-principal";
import { describeRuleLimit, formatLevels } from "../_components/describe-rule-limit";
import { parseDescriptorLines } from "../_components/descriptor-lines";

export const metadata: Metadata = { title: "Explain a descriptor call" };

type Explained = DescriptorsExplanation["descriptors"][number];

const VERDICT_TONE: Record<Explained["verdict"], BadgeTone> = {
  rule: "info",
  unlimited: "ok",
  replaced: "muted",
  mapped: "info",
  uncovered: "muted",
  invalid: "bad",
};

function liveText(descriptor: Explained): string {
  if (descriptor.verdict === "mapped") {
    const decision = descriptor.mapped?.decision;
    if (decision == null) return "not read";
    return decision.allowed ? "admitted" : `rejected by ${decision.scope ?? "a limit"}`;
  }
  const live = descriptor.live;
  if (live === null) return descriptor.verdict === "rule" ? "not read" : "nothing counted";
  if (live.allowed) return `admitted, ${live.remaining} left after it`;
  return descriptor.rule?.mode === "dry-run" ? "would reject (shadow mode)" : "OVER_LIMIT";
}

export default async function ExplainDescriptorsPage({
  searchParams,
}: {
  searchParams: Promise<PageSearchParams>;
}) {
  const query = await searchParams;
  const domain = singleParam(query, "domain") ?? "";
  const text = singleParam(query, "descriptors") ?? "";
  await requirePrincipal("policy.read", { next: "/descriptor-rules/explain" });
  await connection();
  let result: DescriptorsExplanation | null = null;
  let problem: string | null = null;
  if (domain !== "" || text !== "") {
    try {
      result = await explainDescriptors(
        { domain, descriptors: parseDescriptorLines(text) },
        explainDeps(),
      );
    } catch (error: unknown) {
      if (!isAppError(error)) throw error;
      problem = error.message;
    }
  }
  return (
    <>
      <header className="page-header">
        <p className="small">
          <Link href="/descriptor-rules">Descriptor rules</Link>
        </p>
        <h1>Explain a descriptor call</h1>
        <p>
          Which descriptor rule the rate-limit service would apply to each descriptor of a call,
          with what limit, and what one more call would get now. Nothing is spent.
        </p>
      </header>
      <section className="panel" aria-labelledby="ask-heading">
        <h2 id="ask-heading">The call</h2>
        <form
          action="/descriptor-rules/explain"
          method="get"
          data-testid="explain-descriptors-form"
        >
          <div className={styles.field}>
            <label htmlFor="explain-domain">Domain</label>
            <input
              id="explain-domain"
              name="domain"
              defaultValue={domain}
              maxLength={128}
              required
              autoComplete="off"
            />
          </div>
          <div className={styles.field}>
            <label htmlFor="explain-descriptors">Descriptors</label>
            <textarea
              id="explain-descriptors"
              name="descriptors"
              defaultValue={text}
              rows={4}
              required
              aria-describedby="explain-descriptors-help"
            />
            <p id="explain-descriptors-help" className="muted small">
              One descriptor per line, its entries as <code>key=value</code> separated by commas:{" "}
              <code>tenant=acme, path=/orders</code>. A value holding a comma: use{" "}
              <code>POST /api/v1/explain/descriptors</code>.
            </p>
          </div>
          <button className="button" type="submit">
            Explain
          </button>
        </form>
        {problem !== null ? (
          <p className={styles.fieldError} role="alert" data-testid="explain-problem">
            {problem}
          </p>
        ) : null}
      </section>
      {result !== null ? (
        <section className="panel" aria-labelledby="answer-heading">
          <h2 id="answer-heading">
            Answer:{" "}
            <span data-testid="explain-overall">{result.overallCode ?? "unknown (see below)"}</span>
          </h2>
          <p className="muted small">
            Policy version {result.policyVersion}. A call is over the limit if any descriptor is;
            shadow-mode rules never make it so.
            {result.liveError !== null ? ` ${result.liveError}` : ""}
          </p>
          <ScrollRegion label="Descriptors explained">
            <table className="data" data-testid="explained-descriptors">
              <thead>
                <tr>
                  <th scope="col">Descriptor</th>
                  <th scope="col">Decided by</th>
                  <th scope="col">Limit</th>
                  <th scope="col">Now</th>
                  <th scope="col">Why</th>
                </tr>
              </thead>
              <tbody>
                {result.descriptors.map((descriptor, index) => (
                  // biome-ignore lint/suspicious/noArrayIndexKey: descriptors are positional.
                  <tr key={index} data-testid={`explained-${index}`}>
                    <td>
                      <code>{formatLevels(descriptor.entries)}</code>
                    </td>
                    <td>
                      <Badge tone={VERDICT_TONE[descriptor.verdict]}>{descriptor.verdict}</Badge>{" "}
                      {descriptor.rule !== null ? (
                        <Link href={`/descriptor-rules/${encodeURIComponent(descriptor.rule.id)}`}>
                          <code>{descriptor.rule.pattern}</code>
                        </Link>
                      ) : null}
                      {descriptor.rule?.mode === "dry-run" ? " (shadow mode)" : ""}
                    </td>
                    <td>
                      {descriptor.limit !== null ? describeRuleLimit(descriptor.limit) : ""}
                      {descriptor.raise !== null ? " (raised)" : ""}
                    </td>
                    <td data-testid={`explained-${index}-now`}>{liveText(descriptor)}</td>
                    <td>
                      <ul className="small">
                        {[...descriptor.explanation, ...(descriptor.mapped?.explanation ?? [])].map(
                          (line, lineIndex) => (
                            // biome-ignore lint/suspicious/noArrayIndexKey: lines are positional.
                            <li key={lineIndex}>{line}</li>
                          ),
                        )}
                      </ul>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </ScrollRegion>
        </section>
      ) : null}
    </>
  );
}
