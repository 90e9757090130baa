/**
 * The digest a server error carries when the database did not answer, so a client error boundary
 * (which in production sees no message) can say so instead of guessing. Set by
 * lib/server/current-principal.ts; read by components/ui/route-error.tsx and app/error.tsx.
 */
export const DATABASE_UNAVAILABLE_DIGEST = "LIMITPLANE_DATABASE_UNAVAILABLE";

export const DATABASE_UNAVAILABLE_MESSAGE =
  "The control plane cannot reach its database. Pages that read the policy, the audit log or your session show this until it answers; the status page says what is down.";
