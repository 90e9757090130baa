-- AlterTable
ALTER TABLE "MetricMinute" DROP CONSTRAINT "MetricMinute_pkey",
ADD COLUMN     "region" TEXT NOT NULL DEFAULT '',
ADD CONSTRAINT "MetricMinute_pkey" PRIMARY KEY ("region", "scope", "minute");
