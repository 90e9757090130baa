-- AlterTable
ALTER TABLE "AuditEntry" ALTER COLUMN "at" SET DEFAULT clock_timestamp();
