/**
 * The dependencies of the command-line tools that manage operators and tokens: the configured
 * database, production password hashing, and no shared limiter (no sign-in happens here, so no
 * Redis connection is opened).
 */

import { MemoryStore } from "@limitplane/enforcer/limiter";
import { DEFAULT_SCRYPT_PARAMS } from "../lib/control/auth/password";
import { SignInLimiter } from "../lib/control/auth/sign-in-limiter";
import type { AuthDeps } from "../lib/control/deps";
import { sessionSettingsFromEnv, systemClock } from "../lib/server/composition";
import { getPrisma } from "../lib/server/db";
import { loadEnv } from "../lib/server/env";

export function cliAuthDeps(): AuthDeps {
  return {
    db: getPrisma(),
    clock: systemClock,
    passwordParams: DEFAULT_SCRYPT_PARAMS,
    sessions: sessionSettingsFromEnv(),
    signInLimiter: new SignInLimiter({
      store: new MemoryStore({ maxKeys: 16 }),
      secret: loadEnv().SESSION_SECRET,
    }),
    auditKey: loadEnv().AUDIT_KEY,
  };
}

/** One line for the person at the terminal: an AppError's message and field errors, else the error. */
export function describeCliError(error: unknown): string {
  if (error instanceof Error && "fieldErrors" in error && Array.isArray(error.fieldErrors)) {
    const fields = (error.fieldErrors as { path: string; message: string }[])
      .map((field) => `${field.path}: ${field.message}`)
      .join("; ");
    return fields === "" || error.message.includes(fields)
      ? error.message
      : `${error.message} (${fields})`;
  }
  return error instanceof Error ? error.message : String(error);
}
