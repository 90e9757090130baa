/**
 * `npm run audit:verify`: checks the audit log's hash chain from its first entry to its last
 * (lib/control/audit/verify-audit-chain.ts) with the AUDIT_KEY the console and the worker use.
 * Prints what it verified and the head to note; exit 0 when the chain is whole, 1 with the first
 * broken entry named when it is not, 2 when it could not check (configuration, database).
 */
import { verifyAuditChain } from "../lib/control/audit/verify-audit-chain";
import { getPrisma } from "../lib/server/db";
import { EnvError, loadEnv } from "../lib/server/env";

async function main(): Promise<number> {
  const env = loadEnv();
  const db = getPrisma();
  try {
    const verification = await verifyAuditChain({ db, auditKey: env.AUDIT_KEY });
    const before =
      verification.entriesBeforeChain > 0
        ? ` (${verification.entriesBeforeChain} earlier entries were written before the chain existed)`
        : "";
    console.log(`audit:verify: ${verification.entriesVerified} chained entries verified${before}.`);
    if (verification.head !== null) {
      console.log(
        `audit:verify: head is entry ${verification.head.entryId}, chain hash ${verification.head.chainHash}`,
      );
    }
    if (verification.firstBreak !== null) {
      console.log(
        `audit:verify: BROKEN at entry ${verification.firstBreak.entryId} (${verification.firstBreak.problem}): ${verification.firstBreak.message}`,
      );
      return 1;
    }
    console.log("audit:verify: the chain is whole.");
    return 0;
  } finally {
    await db.$disconnect();
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(
      error instanceof EnvError
        ? error.message
        : `audit:verify: ${error instanceof Error ? error.message : String(error)}`,
    );
    process.exit(2);
  },
);
