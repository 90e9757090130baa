-- CreateTable
CREATE TABLE "MetricMinute" (
    "scope" TEXT NOT NULL,
    "minute" TIMESTAMPTZ(3) NOT NULL,
    "allowed" INTEGER NOT NULL DEFAULT 0,
    "rejected" INTEGER NOT NULL DEFAULT 0,
    "wouldReject" INTEGER NOT NULL DEFAULT 0,
    "degraded" INTEGER NOT NULL DEFAULT 0,

    CONSTRAINT "MetricMinute_pkey" PRIMARY KEY ("scope","minute")
);

-- CreateIndex
CREATE INDEX "MetricMinute_minute_idx" ON "MetricMinute"("minute");
