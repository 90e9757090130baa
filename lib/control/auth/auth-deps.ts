/**
 * What the authentication, operator and token services run against. Route handlers and scripts
 * use the process-wide `getAuthDeps()`; tests pass their own or install them for the process
 * (`installAuthDeps`), to drive the clock, use fast password hashing and a private limiter.
 */
import type { PrismaClient } from "@/lib/generated/prisma/client";
import { loadEnv } from "@/lib/server/env";
import { getSharedLimiterStore } from "@/lib/server/limiter-store";
import { getControlDeps } from "../control-deps";
import { type SessionSettings, sessionSettingsFromEnv } from "./auth-settings";
import { DEFAULT_SCRYPT_PARAMS, type ScryptParams } from "./password";
import { SignInLimiter } from "./sign-in-limiter";

export interface AuthDeps {
  readonly db: PrismaClient;
  /** Wall clock in ms: session and token expiry are judged against it. */
  readonly nowMs: () => number;
  /** For new password hashes. Tests use cheap ones; production keeps the default. */
  readonly passwordParams: ScryptParams;
  readonly sessions: SessionSettings;
  readonly signInLimiter: SignInLimiter;
}

const globalForAuth = globalThis as typeof globalThis & { limitplaneAuthDeps?: AuthDeps };

/** The process-wide dependencies, created on first use. */
export function getAuthDeps(): AuthDeps {
  if (globalForAuth.limitplaneAuthDeps === undefined) {
    const env = loadEnv();
    globalForAuth.limitplaneAuthDeps = {
      db: getControlDeps().db,
      nowMs: Date.now,
      passwordParams: DEFAULT_SCRYPT_PARAMS,
      sessions: sessionSettingsFromEnv(),
      signInLimiter: new SignInLimiter({
        store: getSharedLimiterStore("signin:"),
        secret: env.SESSION_SECRET,
      }),
    };
  }
  return globalForAuth.limitplaneAuthDeps;
}

/** Replaces the process-wide dependencies (tests, scripts with their own database). */
export function installAuthDeps(deps: AuthDeps): void {
  globalForAuth.limitplaneAuthDeps = deps;
}
