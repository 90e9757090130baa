import { defineConfig } from "prisma/config";

/**
 * Prisma CLI configuration. Migrations are written and applied by `scripts/db/migrate.ts` through the
 * WebAssembly schema engine (no native engine is needed); `prisma migrate deploy` agrees with them
 * wherever the native engine exists, because both record into `_prisma_migrations` the same way.
 */
export default defineConfig({
  schema: "prisma/schema.prisma",
  migrations: { path: "prisma/migrations" },
  datasource: {
    url: process.env.DATABASE_URL ?? "postgresql://postgres@127.0.0.1:5432/limitplane",
  },
});
