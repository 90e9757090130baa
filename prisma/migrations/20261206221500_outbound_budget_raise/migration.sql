-- AlterTable
ALTER TABLE "OutboundBudget" ADD COLUMN     "raise" JSONB;
