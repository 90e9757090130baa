/**
 * Signing in with an email and a password, into a new session.
 *
 * 1. The attempt is checked against the sign-in limits BEFORE anything else (sign-in-limiter.ts):
 *    an over-limit attempt is refused with RATE_LIMITED and costs no hash; a wrong password is
 *    counted as a failure, a correct one is not.
 * 2. The password is verified against the operator's hash, or against a dummy hash of the same
 *    cost when there is no such operator, so "no such account" and "wrong password" take the same
 *    time and get the same answer.
 * 3. A disabled operator is refused (said only to whoever knows the password).
 * 4. A session row stores the SHA-256 of a new random token; the token goes to the caller (the
 *    cookie) and nowhere else.
 *
 * With password sign-in off (PASSWORD_SIGN_IN=off, single sign-on instead), every attempt is
 * refused before the limits and the hash, except for the break-glass admins
 * (`PasswordSignInPolicy`): they sign in as usual, and each such sign-in writes an
 * `operator.break-glass-sign-in` audit entry and a warning line.
 */

import { hasForbiddenCharacter } from "@limitplane/enforcer/policy";
import { z } from "zod";
import { runAuditedChange } from "../audit/run-audited-change";
import { parseOptions } from "../change-context";
import type { AuthDeps } from "../deps";
import { AppError } from "../errors";
import { type OperatorRecord, operatorSelect, toOperatorRecord } from "../operator/operator-record";
import { createSession } from "./create-session";
import {
  dummyPasswordHash,
  hashPassword,
  MAX_PASSWORD_LENGTH,
  needsRehash,
  verifyPassword,
} from "./password";
import type { SessionRecord } from "./session-record";
import { PASSWORD_SIGN_IN_ON } from "./sso-settings";

/** Sign-in takes any text as the email: whatever was typed is looked up, lower-cased. */
export const ZSignInCredentials = z.strictObject({
  email: z
    .string({
      error: (issue) => (issue.input === undefined ? "email is required" : "email must be text"),
    })
    .trim()
    .toLowerCase()
    .min(1, { error: "email is required" })
    .max(254, { error: "email must be at most 254 characters" })
    // Postgres refuses NUL in text; no address holds any of these.
    .refine((value) => !hasForbiddenCharacter(value), {
      error: "email must not contain control or bidirectional formatting characters",
    }),
  password: z
    .string({
      error: (issue) =>
        issue.input === undefined ? "password is required" : "password must be text",
    })
    .min(1, { error: "password is required" })
    .max(MAX_PASSWORD_LENGTH, {
      error: `password must be at most ${MAX_PASSWORD_LENGTH} characters`,
    }),
});

export const ZSignInOptions = ZSignInCredentials.extend({
  /** The client's address, for the per-address limit and the session list. */
  address: z.string().max(100).nullable().default(null),
  userAgent: z.string().max(2_000).nullable().default(null),
});
export type SignInOptions = z.input<typeof ZSignInOptions>;

export interface SignInResult {
  /** The cookie's value: shown to nobody else, stored only as its hash. */
  readonly sessionToken: string;
  readonly session: SessionRecord;
  readonly operator: OperatorRecord;
}

const WRONG_CREDENTIALS = "The email or password is wrong.";

function findOperatorWithHash(email: string, deps: AuthDeps) {
  return deps.db.operator.findUnique({
    where: { email },
    select: { ...operatorSelect, passwordHash: true },
  });
}

export async function signIn(options: SignInOptions, deps: AuthDeps): Promise<SignInResult> {
  const input = parseOptions(ZSignInOptions, options);
  const policy = deps.passwordSignIn ?? PASSWORD_SIGN_IN_ON;
  const isBreakGlass = !policy.isEnabled && policy.breakGlassEmails.includes(input.email);
  if (!policy.isEnabled && !isBreakGlass) {
    throw new AppError(
      "FORBIDDEN",
      "Password sign-in is turned off here. Sign in through your identity provider.",
      { details: { passwordSignIn: "off" } },
    );
  }
  // Looked up only once the limits admit the attempt.
  const found: { row: Awaited<ReturnType<typeof findOperatorWithHash>> } = { row: null };
  const isMatch = await deps.signInLimiter.verify(
    { address: input.address, email: input.email },
    async () => {
      found.row = await findOperatorWithHash(input.email, deps);
      return verifyPassword(
        input.password,
        found.row?.passwordHash ?? (await dummyPasswordHash(deps.passwordParams)),
      );
    },
  );
  const { row } = found;
  if (row === null || !isMatch) throw new AppError("UNAUTHENTICATED", WRONG_CREDENTIALS);
  if (row.disabledAt !== null) {
    throw new AppError("FORBIDDEN", "This operator is disabled. Ask an admin to enable it.");
  }
  const { passwordHash, ...operatorRow } = row;
  if (needsRehash(passwordHash, deps.passwordParams)) {
    // Stronger parameters than when it was set: upgrade it now that we know the password.
    await deps.db.operator.updateMany({
      where: { id: row.id, passwordHash },
      data: { passwordHash: await hashPassword(input.password, deps.passwordParams) },
    });
  }
  if (isBreakGlass) {
    if (row.role !== "admin") {
      throw new AppError(
        "FORBIDDEN",
        "Password sign-in is turned off here; break-glass sign-in is for admins only.",
      );
    }
    await recordBreakGlassSignIn(row, input.address, deps);
  }
  const { sessionToken, session } = await createSession(row.id, input, deps);
  return { sessionToken, session, operator: toOperatorRecord(operatorRow) };
}

/** Loud on purpose: an audit entry and a warning line, each naming who and from where. */
async function recordBreakGlassSignIn(
  row: { readonly id: string; readonly name: string; readonly email: string },
  address: string | null,
  deps: AuthDeps,
): Promise<void> {
  console.warn(
    `BREAK-GLASS: ${row.email} signed in with a password while password sign-in is off (from ${address ?? "an unknown address"})`,
  );
  await runAuditedChange(
    deps,
    {
      actor: { type: "operator", id: row.id, name: row.name },
      reason: `Break-glass password sign-in while password sign-in is off (from ${address ?? "an unknown address"})`,
    },
    {
      action: "operator.break-glass-sign-in",
      entityType: "operator",
      async write() {
        return {
          entityId: row.id,
          before: null,
          after: { email: row.email, address },
          value: {},
        };
      },
    },
  );
}
