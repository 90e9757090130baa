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
 */

import { hasForbiddenCharacter, sha256Hex } from "@limitplane/enforcer/policy";
import { z } from "zod";
import { parseOptions } from "../change-context";
import type { AuthDeps } from "../deps";
import { AppError } from "../errors";
import { type OperatorRecord, operatorSelect, toOperatorRecord } from "../operator/operator-record";
import {
  dummyPasswordHash,
  hashPassword,
  MAX_PASSWORD_LENGTH,
  needsRehash,
  verifyPassword,
} from "./password";
import { newSessionToken } from "./secret-token";
import {
  cleanHeaderText,
  newSessionId,
  type SessionRecord,
  sessionSelect,
  toSessionRecord,
} from "./session-record";

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
  const nowMs = deps.clock.nowMs();
  const sessionToken = newSessionToken();
  const session = await deps.db.session.create({
    data: {
      id: newSessionId(),
      tokenHash: sha256Hex(sessionToken),
      operatorId: row.id,
      createdAt: new Date(nowMs),
      expiresAt: new Date(nowMs + deps.sessions.lifetimeMs),
      lastSeenAt: new Date(nowMs),
      userAgent: cleanHeaderText(input.userAgent, 300),
      address: cleanHeaderText(input.address, 100),
    },
    select: sessionSelect,
  });
  return {
    sessionToken,
    session: toSessionRecord(session),
    operator: toOperatorRecord(operatorRow),
  };
}
