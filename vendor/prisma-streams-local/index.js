/**
 * `prisma dev` (a local Prisma Postgres) is the only caller of the real @prisma/streams-local,
 * which needs Node 22. Limitplane runs its own embedded Postgres (scripts/lib/embedded-postgres.ts),
 * so this stand-in says so instead of failing somewhere deep inside.
 */
export async function startLocalDurableStreamsServer() {
  throw new Error(
    "`prisma dev` is not used in Limitplane: `npm run up` starts an embedded Postgres (PGlite) itself, or set DATABASE_URL.",
  );
}
