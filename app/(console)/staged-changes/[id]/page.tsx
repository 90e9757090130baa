import type { Metadata } from "next";
import Link from "next/link";
import { notFound } from "next/navigation";
import { connection } from "next/server";
import { AutoRefresh } from "@/components/auto-refresh";
import { StagedChangeChart } from "@/components/charts/staged-change-chart";
import { AuditHistory } from "@/components/ops/audit-history";
import styles from "@/components/ops/ops.module.css";
import { Badge, type BadgeTone } from "@/components/ui/badge";
import { LocalTime } from "@/components/ui/local-time";
import { formatLimit } from "@/lib/console";
import { buildStagedChart } from "@/lib/console/staged-chart";
import { can, isAppError, listAuditEntries } from "@/lib/control";
import { formatPercent } from "@/lib/control/format-percent";
import { getStagedChange } from "@/lib/control/staged-change/get-staged-change";
import { readStagedFigures } from "@/lib/control/staged-change/read-staged-figures";
import type { StagedChangeState } from "@/lib/control/staged-change/staged-change-record";
import { clock, controlDeps, scopeCountsDeps } from "@/lib/server/composition";
import { requirePrincipal } from "@/lib/server/current-principal";
import { StagedChangeActions } from "./staged-change-actions";

export const metadata: Metadata = { title: "Staged change" };

const STATE_TONE: Record<StagedChangeState, BadgeTone> = {
  running: "ok",
  paused: "warn",
  completed: "muted",
  aborted: "muted",
  reverted: "bad",
};

function formatDwell(ms: number): string {
  if (ms % 3_600_000 === 0) return `${ms / 3_600_000} h`;
  if (ms % 60_000 === 0) return `${ms / 60_000} min`;
  return `${ms / 1000} s`;
}

export default async function StagedChangePage({ params }: { params: Promise<{ id: string }> }) {
  const { id: rawId } = await params;
  const id = decodeURIComponent(rawId);
  const principal = await requirePrincipal("policy.read", {
    next: `/staged-changes/${encodeURIComponent(id)}`,
  });
  await connection();
  const nowMs = clock().nowMs();
  const change = await getStagedChange(id, controlDeps()).catch((error: unknown) => {
    if (isAppError(error) && error.code === "NOT_FOUND") notFound();
    throw error;
  });
  const [figures, audit] = await Promise.all([
    readStagedFigures(change, nowMs, scopeCountsDeps()),
    listAuditEntries({ entityType: "staged-change", entityId: id, limit: 50 }, controlDeps()),
  ]);
  const chart = buildStagedChart({
    minutes: figures.minutes,
    events: audit.entries.map((entry) => ({
      atMs: Date.parse(entry.at),
      auditEntryId: entry.id,
      action: entry.action,
    })),
    stepSlicesBasisPoints: change.steps.map((step) => step.sliceBasisPoints),
    createdAtMs: Date.parse(change.createdAt),
    endedAtMs: change.endedAt === null ? null : Date.parse(change.endedAt),
    nowMs,
  });
  const isLive = change.state === "running" || change.state === "paused";

  return (
    <>
      {isLive ? <AutoRefresh intervalMs={5_000} /> : null}
      <header className="page-header">
        <p className="small">
          <Link href="/dry-run">← Dry-run and staged changes</Link>
        </p>
        <h1 className={styles.wrap}>
          Staged change <code>{change.id}</code>{" "}
          <Badge tone={STATE_TONE[change.state]} dot>
            {change.state}
          </Badge>
        </h1>
        <p className={styles.summary} data-testid="staged-headline">
          <code>{change.target}</code>:{" "}
          {change.previousLimit === null ? "no limit" : formatLimit(change.previousLimit)} →{" "}
          {formatLimit(change.limit)} · step {change.stepIndex + 1} of {change.steps.length} (
          {change.sliceBasisPoints / 100} % of subjects)
        </p>
      </header>

      {change.endReason !== null ? (
        <section className="panel" aria-labelledby="why-heading">
          <h2 id="why-heading">Why it ended</h2>
          <p data-testid="staged-end-reason">{change.endReason}</p>
          {change.endedAt === null ? null : (
            <p className="muted small">
              <LocalTime at={change.endedAt} />
            </p>
          )}
        </section>
      ) : null}
      {change.holdNotifiedAt !== null && isLive ? (
        <section className="panel" aria-labelledby="hold-heading">
          <h2 id="hold-heading">Holding for traffic</h2>
          <p>
            This step has waited three times its dwell time and its slice has seen fewer than{" "}
            {change.guard.minRequests} requests, too few to judge. Advance it or abort it.
          </p>
        </section>
      ) : null}

      <StagedChangeActions
        id={change.id}
        version={change.version}
        state={change.state}
        stepIndex={change.stepIndex}
        stepCount={change.steps.length}
        canWrite={can(principal.role, "candidate.write")}
        canPromote={can(principal.role, "candidate.promote")}
      />

      <section className="panel" aria-labelledby="figures-heading">
        <h2 id="figures-heading">Slice against the rest</h2>
        <p>
          Slice: {formatPercent(figures.sliceRate)} of {figures.sliceRequests} requests rejected ·
          rest: {formatPercent(figures.restRate)} of {figures.restRequests}
          {figures.isLive ? "" : " (the last minutes could not be read from Redis)"}
        </p>
        <StagedChangeChart data={chart} />
      </section>

      <section className="panel" aria-labelledby="steps-heading">
        <h2 id="steps-heading">Steps</h2>
        <ol>
          {change.steps.map((step, index) => (
            <li
              key={step.sliceBasisPoints}
              aria-current={index === change.stepIndex ? "step" : undefined}
            >
              {step.sliceBasisPoints / 100} % for at least {formatDwell(step.dwellMs)}
              {index === change.stepIndex ? " (current)" : ""}
            </li>
          ))}
        </ol>
        <p className="muted small">
          Guard: reverts when the slice&apos;s rejection rate exceeds the rest&apos;s by more than{" "}
          {change.guard.marginPercent} points, with at least {change.guard.minRequests} requests in
          the slice, for {change.guard.consecutiveWindows} windows of{" "}
          {formatDwell(change.guard.windowMs)} in a row. Started by {change.createdBy},{" "}
          <LocalTime at={change.createdAt} />.
        </p>
      </section>

      <section className="panel" aria-labelledby="history-heading">
        <h2 id="history-heading">History</h2>
        <AuditHistory entries={audit.entries} />
      </section>
    </>
  );
}
