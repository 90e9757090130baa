import { isRecordId, limitAtScope, type PolicyRules } from "@limitplane/enforcer/policy";
import type { Metadata } from "next";
import Link from "next/link";
import { AutoRefresh } from "@/components/auto-refresh";
import { EmptyState } from "@/components/ui/empty-state";
import { LocalTime } from "@/components/ui/local-time";
import { CHART_RANGES, chartWindow, formatLimit } from "@/lib/console";
import {
  can,
  getPolicySettings,
  listCandidates,
  listEndpointClasses,
  listTiers,
} from "@/lib/control";
import { readCandidateComparisons } from "@/lib/control/dry-run/read-candidate-comparisons";
import { clock, controlDeps, scopeCountsDeps } from "@/lib/server/composition";
import { requirePrincipal } from "@/lib/server/current-principal";
import { describePolicyLimit, describeScope } from "../policies/_components/policy-words";
import { RolloutLine } from "../policies/_components/rollout-line";
import { ComparisonSentence } from "./_components/compared-span";
import { type CandidateTarget, CreateCandidateForm } from "./_components/create-candidate-form";
import styles from "./dry-run.module.css";

export const metadata: Metadata = { title: "Dry-run" };

type SearchParams = Record<string, string | string[] | undefined>;

/** What the candidate page just did, from `?done=promoted|discarded&id=…&version=…`. */
function doneNotice(
  params: SearchParams,
): { done: "promoted" | "discarded"; id: string; version: number | null } | null {
  const done = params.done;
  const id = params.id;
  const version = typeof params.version === "string" ? Number(params.version) : null;
  if ((done !== "promoted" && done !== "discarded") || typeof id !== "string" || !isRecordId(id)) {
    return null;
  }
  return {
    done,
    id,
    version: version !== null && Number.isInteger(version) && version > 0 ? version : null,
  };
}

export default async function DryRunPage({
  searchParams,
}: {
  searchParams: Promise<SearchParams>;
}) {
  const principal = await requirePrincipal("policy.read", { next: "/dry-run" });
  const query = await searchParams;
  const notice = doneNotice(query);
  const initialTarget = typeof query.target === "string" ? query.target : null;
  const [candidates, tiers, endpointClasses, settings] = await Promise.all([
    listCandidates(controlDeps()),
    listTiers(controlDeps()),
    listEndpointClasses(controlDeps()),
    getPolicySettings(controlDeps()),
  ]);
  const rules: PolicyRules = {
    defaultTier: settings.defaultTier,
    defaultEndpointClass: settings.defaultEndpointClass,
    tiers,
    endpointClasses,
    ceilings: settings.ceilings,
  };
  const nowMs = clock().nowMs();
  // The same read as the candidate page, over its default range: each card states its span.
  const range = CHART_RANGES["15m"];
  const window = chartWindow(range, { nowMs, includeCurrentBucket: true });
  const read = await readCandidateComparisons(
    {
      candidates,
      range: { startMs: window.startMs, endMs: window.endMs, label: range.label },
      nowMs,
    },
    scopeCountsDeps(),
  );
  const canCreate = can(principal.role, "candidate.write");
  const targets: CandidateTarget[] = [
    ...tiers.map((tier) => ({
      scope: `tier:${tier.name}`,
      group: "Tier limits (all endpoints)",
      current: tier.limit,
    })),
    ...tiers.flatMap((tier) =>
      endpointClasses.map((endpointClass) => {
        const scope = `tier:${tier.name}/endpoint:${endpointClass.name}`;
        return {
          scope,
          group: "A tier on one endpoint class",
          current: limitAtScope(rules, scope),
        };
      }),
    ),
    { scope: "ceiling", group: "Ceilings", current: settings.ceilings.perCustomer },
    ...endpointClasses.map((endpointClass) => ({
      scope: `ceiling/endpoint:${endpointClass.name}`,
      group: "Ceilings",
      current: endpointClass.ceiling,
    })),
    { scope: "address", group: "Anonymous (per address)", current: settings.ceilings.perAddress },
    ...endpointClasses.map((endpointClass) => ({
      scope: `address/endpoint:${endpointClass.name}`,
      group: "Anonymous (per address)",
      current: endpointClass.anonymousLimit,
    })),
  ];

  return (
    <>
      <header className="page-header">
        <h1>Dry-run</h1>
        <p>
          Try a limit on real traffic before it rejects anything: a candidate is counted next to the
          rule it would replace, for the same customers, and says what it would have blocked. Once
          it looks right, an admin promotes it to enforcement. <AutoRefresh intervalMs={10_000} />
        </p>
      </header>

      {notice !== null ? (
        <p className="notice" role="status" data-testid="done-notice">
          Candidate <span className="mono">{notice.id}</span>{" "}
          {notice.done === "promoted" ? (
            <>
              was promoted: it is enforced now
              {notice.version !== null ? (
                <>
                  {" "}
                  as of policy version <strong data-testid="done-version">{notice.version}</strong>
                </>
              ) : null}
              . {notice.version !== null ? <RolloutLine version={notice.version} /> : null}
            </>
          ) : (
            "was discarded; the rule in force is unchanged."
          )}
        </p>
      ) : null}

      <section className="panel" aria-labelledby="candidates-heading">
        <h2 id="candidates-heading">Candidates running</h2>
        {!read.isLive ? (
          <p className="notice" role="status">
            Redis cannot be read: the counts below miss the last few minutes.
          </p>
        ) : null}
        {candidates.length === 0 ? (
          <EmptyState title="No candidate is running">
            {canCreate
              ? "Create one below: pick the rule it would replace and the stricter limit to try."
              : "Operators and admins can create one."}
          </EmptyState>
        ) : (
          <ul className={styles.candidateList} data-testid="candidate-list">
            {read.items.map(({ candidate, comparison }) => {
              const current = limitAtScope(rules, candidate.target);
              return (
                <li
                  key={candidate.id}
                  className={styles.candidateCard}
                  data-testid={`candidate-${candidate.id}`}
                >
                  <div className={styles.cardHead}>
                    <h3>
                      <Link href={`/dry-run/${encodeURIComponent(candidate.id)}`}>
                        {candidate.id}
                      </Link>
                    </h3>
                    <span className="muted small">
                      by {candidate.createdBy}, <LocalTime at={candidate.createdAt} relative />
                    </span>
                  </div>
                  <p className="small">
                    <code>{candidate.target}</code>: {describeScope(candidate.target)}
                  </p>
                  <dl className="facts">
                    <dt>In force</dt>
                    <dd>{describePolicyLimit(current)}</dd>
                    <dt>Candidate</dt>
                    <dd>
                      <strong>{formatLimit(candidate.limit)}</strong>
                    </dd>
                  </dl>
                  <p className="small" data-testid={`comparison-${candidate.id}`}>
                    <ComparisonSentence comparison={comparison} targetScope={candidate.target} />
                  </p>
                </li>
              );
            })}
          </ul>
        )}
      </section>

      <section className="panel" aria-labelledby="create-heading">
        <h2 id="create-heading">Create a candidate</h2>
        {canCreate ? (
          <CreateCandidateForm targets={targets} initialTarget={initialTarget} />
        ) : (
          <p className="muted" data-testid="read-only">
            Operators and admins can create candidates (your role: {principal.role}).
          </p>
        )}
      </section>
    </>
  );
}
