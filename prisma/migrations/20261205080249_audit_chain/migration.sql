-- AlterTable
ALTER TABLE "AuditEntry" ADD COLUMN     "chainHash" TEXT,
ADD COLUMN     "chainMac" TEXT;
