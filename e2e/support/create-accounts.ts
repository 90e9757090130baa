/**
 * Run by the end-to-end global setup (`tsx e2e/support/create-accounts.ts`): one operator per role
 * with the passwords in e2e/run-env.ts, created through the real service (audited, scrypt-hashed).
 * Safe to run twice: an existing account is left as it is.
 */
import { systemActor } from "../../lib/control/change-context";
import { isAppError } from "../../lib/control/errors";
import { createOperator } from "../../lib/control/operator/create-operator";
import { cliAuthDeps } from "../../scripts/cli-deps";
import { E2E_ACCOUNTS } from "../run-env";

const deps = cliAuthDeps();
for (const account of Object.values(E2E_ACCOUNTS)) {
  try {
    await createOperator(
      { email: account.email, name: account.name, role: account.role, password: account.password },
      { actor: systemActor("e2e setup"), reason: "end-to-end test account" },
      deps,
    );
  } catch (error: unknown) {
    if (!(isAppError(error) && error.code === "CONFLICT")) throw error;
  }
}
await deps.db.$disconnect();
