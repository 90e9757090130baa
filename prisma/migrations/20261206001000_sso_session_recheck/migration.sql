-- AlterTable
ALTER TABLE "Session" ADD COLUMN     "ssoCheckDueAt" TIMESTAMPTZ(3),
ADD COLUMN     "ssoCheckedAt" TIMESTAMPTZ(3),
ADD COLUMN     "ssoTokens" TEXT;
