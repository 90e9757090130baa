import Link from "next/link";
import { verifyAuditChain } from "@/lib/control";
import { controlDeps } from "@/lib/server/composition";

/**
 * Whether the audit log's hash chain is whole (GET /api/v1/audit/verification says the same), and
 * the first entry where it is not. Reads the whole log, so the page streams it in after the list.
 */
export async function ChainStatus() {
  const verification = await verifyAuditChain(controlDeps());
  const { firstBreak, head } = verification;
  return (
    <section className="panel" aria-labelledby="audit-chain-heading" data-testid="audit-chain">
      <h2 id="audit-chain-heading">
        Integrity{" "}
        {firstBreak === null ? (
          <span className="badge badge-ok">Chain whole</span>
        ) : (
          <span className="badge badge-bad">Chain broken</span>
        )}
      </h2>
      {firstBreak === null ? (
        <p className="muted small">
          {verification.entriesVerified} entries verified against their hashes and AUDIT_KEY
          {head === null ? "" : `; the newest is entry ${head.entryId}`}
          {verification.entriesBeforeChain > 0
            ? `; ${verification.entriesBeforeChain} older entries predate the chain`
            : ""}
          .
        </p>
      ) : (
        <p data-testid="audit-chain-break">
          {firstBreak.message}{" "}
          <Link href={`/audit?entry=${encodeURIComponent(firstBreak.entryId)}`}>
            Open entry {firstBreak.entryId}
          </Link>
        </p>
      )}
    </section>
  );
}
