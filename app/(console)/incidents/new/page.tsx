import type { Metadata } from "next";
import Link from "next/link";
import { connection } from "next/server";
import {
  findRegisteredOrSeen,
  type RegisteredOrSeen,
  SeenOnlyTier,
} from "@/components/customers/seen-only";
import { incidentScopeOptions, scopeOfRejection } from "@/components/ops/incident-scopes";
import styles from "@/components/ops/ops.module.css";
import { hrefWith, type PageSearchParams, singleParam } from "@/components/ops/search-params";
import { Badge } from "@/components/ui/badge";
import { EmptyState } from "@/components/ui/empty-state";
import {
  type CustomerPage,
  type Explanation,
  explainLimits,
  getPolicySettings,
  isAppError,
  listCustomers,
  listEndpointClasses,
  listIncidents,
  listSeenCustomers,
  listTiers,
  type SeenCustomerRecord,
} from "@/lib/control";
import { can } from "@/lib/control/auth/roles";
import { clock, controlDeps, explainDeps, seenCustomerDeps } from "@/lib/server/composition";
import { requirePrincipal } from "@/lib/server/current-principal";
import { readCustomerRejections } from "@/lib/server/ops/customer-rejections";
import { IncidentForm } from "./incident-form";

export const metadata: Metadata = { title: "Raise a limit" };

export default async function NewIncidentPage({
  searchParams,
}: {
  searchParams: Promise<PageSearchParams>;
}) {
  const params = await searchParams;
  const customerId = singleParam(params, "customer");
  const q = singleParam(params, "q")?.trim() || undefined;
  const principal = await requirePrincipal("policy.read", {
    next: hrefWith("/incidents/new", { customer: customerId, q }),
  });
  await connection();
  if (!can(principal.role, "incident.write")) {
    // Said plainly instead of an error page; the API refuses the raise anyway (403).
    return (
      <>
        <header className="page-header">
          <h1>Raise a limit (incident)</h1>
        </header>
        <EmptyState
          title={`Your role (${principal.role}) may not raise limits`}
          action={
            <Link className="button button-secondary" href="/overrides">
              See overrides in force
            </Link>
          }
        >
          An operator or an admin can raise a customer's limit during an incident.
        </EmptyState>
      </>
    );
  }

  let found: RegisteredOrSeen = { customer: null, seen: null };
  let lookupProblem: string | null = null;
  if (customerId !== undefined) {
    // A customer only the gateways report can be raised too: the raise registers it.
    found = await findRegisteredOrSeen(customerId);
    if (found.customer === null) {
      lookupProblem = `No customer has the identifier “${customerId}”. Find it below.`;
    }
  }
  const { customer, seen } = found;

  return (
    <>
      <header className="page-header">
        <p className="small">
          {customer === null ? (
            <Link href="/customers">← Customers</Link>
          ) : (
            <Link href={`/customers/${encodeURIComponent(customer.id)}`}>
              ← {customer.displayName}
            </Link>
          )}
        </p>
        <h1>Raise a limit (incident)</h1>
        <p>
          A time-limited override for one customer: it applies within seconds and ends by itself.
          Every raise is audited with your name and reason.
        </p>
      </header>
      {customer === null ? (
        <CustomerPicker q={q} problem={lookupProblem} />
      ) : (
        <RaiseForCustomer customer={customer} seen={seen} />
      )}
    </>
  );
}

async function CustomerPicker({ q, problem }: { q: string | undefined; problem: string | null }) {
  let page: CustomerPage | null = null;
  let searchProblem: string | null = null;
  try {
    page = await listCustomers({ search: q, limit: 20 }, controlDeps());
  } catch (error: unknown) {
    if (!isAppError(error) || error.code !== "VALIDATION_FAILED") throw error;
    searchProblem = error.fieldErrors.map((field) => field.message).join("; ") || error.message;
  }
  // Customers only the gateways report can be raised too (the raise registers them).
  const seen =
    searchProblem === null
      ? await listSeenCustomers({ search: q, limit: 10 }, seenCustomerDeps()).catch(() => null)
      : null;
  return (
    <section className="panel" aria-labelledby="pick-heading">
      <h2 id="pick-heading">Which customer?</h2>
      {problem !== null ? (
        <p className={styles.fieldError} role="alert">
          {problem}
        </p>
      ) : null}
      <search>
        <form className={styles.toolbar} action="/incidents/new" method="get">
          <div className={`${styles.field} ${styles.search}`} data-invalid={searchProblem !== null}>
            <label htmlFor="pick-customer">Identifier or name</label>
            <input
              id="pick-customer"
              name="q"
              type="search"
              defaultValue={q ?? ""}
              maxLength={200}
              autoComplete="off"
            />
            {searchProblem !== null ? (
              <p className={styles.fieldError} role="alert">
                {searchProblem}
              </p>
            ) : null}
          </div>
          <button className="button" type="submit">
            Find
          </button>
        </form>
      </search>
      {page === null ? null : page.customers.length === 0 ? (
        <EmptyState title={q === undefined ? "No customers yet" : `No customer matches “${q}”`} />
      ) : (
        <ul>
          {page.customers.map((candidate) => (
            <li key={candidate.id}>
              <Link href={hrefWith("/incidents/new", { customer: candidate.id })}>
                {candidate.displayName} <code>{candidate.id}</code>
              </Link>{" "}
              <Badge tone="info">{candidate.tier}</Badge>
            </li>
          ))}
        </ul>
      )}
      {seen !== null && seen.customers.length > 0 ? (
        <>
          <h3 className="small">Seen by gateways, not in the registry</h3>
          <ul data-testid="pick-seen-customers">
            {seen.customers.map((candidate) => (
              <li key={candidate.id}>
                <Link href={hrefWith("/incidents/new", { customer: candidate.id })}>
                  <code>{candidate.id}</code>
                </Link>{" "}
                {candidate.reportedTier !== null ? (
                  <Badge tone="muted">{candidate.reportedTier}</Badge>
                ) : null}{" "}
                <span className="muted small">reported by gateways</span>
              </li>
            ))}
          </ul>
        </>
      ) : null}
      {page?.nextCursor != null ? (
        <p className="muted small">More match: type more of the identifier or name.</p>
      ) : null}
    </section>
  );
}

async function RaiseForCustomer({
  customer,
  seen,
}: {
  customer: NonNullable<RegisteredOrSeen["customer"]>;
  seen: SeenCustomerRecord | null;
}) {
  const nowMs = clock().nowMs();
  const [classes, settings, incidents, rejections, tiers] = await Promise.all([
    listEndpointClasses(controlDeps()),
    getPolicySettings(controlDeps()),
    listIncidents({ customerId: customer.id, status: "current", nowMs }, controlDeps()),
    readCustomerRejections(customer.id, 1).catch(() => []),
    seen === null ? null : listTiers(controlDeps()),
  ]);
  // What a seen-only customer is registered with (register-seen-customer.ts decides the same).
  const registersWithTier =
    seen === null
      ? undefined
      : tiers?.some((tier) => tier.name === seen.reportedTier) === true &&
          seen.reportedTier !== null
        ? seen.reportedTier
        : settings.defaultTier;
  const deps = explainDeps();
  const explanations = new Map<string, Explanation>();
  await Promise.all(
    classes.map(async (endpointClass) => {
      const explanation = await explainLimits(
        {
          customerId: customer.id,
          endpointClass: endpointClass.name,
          tier: seen?.reportedTier ?? undefined,
        },
        deps,
      );
      explanations.set(endpointClass.name, explanation);
    }),
  );
  const scopes = incidentScopeOptions(
    classes,
    explanations,
    incidents.filter((incident) => incident.state === "active" || incident.state === "upcoming"),
  );
  const rejectedScope = scopeOfRejection(rejections[0], explanations);
  const defaultScope =
    rejectedScope ??
    scopes.find((option) => option.activeIncidentId === null && option.base !== null)?.value ??
    "account";
  return (
    <>
      <p>
        {seen === null ? (
          <>
            <strong>{customer.displayName}</strong> <code>{customer.id}</code>, tier{" "}
            <Badge tone="info">{customer.tier}</Badge>
          </>
        ) : (
          <>
            <code>{customer.id}</code>, <SeenOnlyTier seen={seen} />
          </>
        )}
        {rejectedScope !== null ? (
          <span className="muted small">
            {" "}
            · preselected: the layer that rejected it most recently
          </span>
        ) : null}
      </p>
      <IncidentForm
        customer={{ id: customer.id, displayName: customer.displayName, tier: customer.tier }}
        registersWithTier={registersWithTier}
        scopes={scopes}
        defaultScope={defaultScope}
        guardrails={{
          maxIncidentFactor: settings.guardrails.maxIncidentFactor,
          maxIncidentDurationMs: settings.guardrails.maxIncidentDurationMs,
        }}
      />
    </>
  );
}
