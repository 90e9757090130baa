-- CreateTable
CREATE TABLE "OutboundMinute" (
    "scope" TEXT NOT NULL,
    "minute" TIMESTAMPTZ(3) NOT NULL,
    "calls" INTEGER NOT NULL DEFAULT 0,
    "waitBuckets" INTEGER[],
    "waitMaxed" INTEGER NOT NULL DEFAULT 0,
    "waitAborted" INTEGER NOT NULL DEFAULT 0,
    "peakInFlight" INTEGER NOT NULL DEFAULT 0,
    "ttlFreed" INTEGER NOT NULL DEFAULT 0,
    "region" TEXT NOT NULL DEFAULT '',

    CONSTRAINT "OutboundMinute_pkey" PRIMARY KEY ("region","scope","minute")
);

-- CreateIndex
CREATE INDEX "OutboundMinute_minute_idx" ON "OutboundMinute"("minute");
