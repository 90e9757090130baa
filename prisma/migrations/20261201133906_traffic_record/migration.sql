-- CreateTable
CREATE TABLE "TrafficBatch" (
    "id" BIGSERIAL NOT NULL,
    "gatewayId" TEXT NOT NULL,
    "firstAt" TIMESTAMPTZ(3) NOT NULL,
    "lastAt" TIMESTAMPTZ(3) NOT NULL,
    "requests" INTEGER NOT NULL,
    "dropped" INTEGER NOT NULL,
    "sampleRate" DOUBLE PRECISION NOT NULL,
    "payload" BYTEA NOT NULL,

    CONSTRAINT "TrafficBatch_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "TrafficStreamCursor" (
    "gatewayId" TEXT NOT NULL,
    "lastId" TEXT NOT NULL,
    "updatedAt" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "TrafficStreamCursor_pkey" PRIMARY KEY ("gatewayId")
);

-- CreateTable
CREATE TABLE "TrafficRecordGap" (
    "id" BIGSERIAL NOT NULL,
    "gatewayId" TEXT NOT NULL,
    "fromAt" TIMESTAMPTZ(3) NOT NULL,
    "toAt" TIMESTAMPTZ(3) NOT NULL,
    "reason" TEXT NOT NULL,

    CONSTRAINT "TrafficRecordGap_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "TrafficBatch_firstAt_idx" ON "TrafficBatch"("firstAt");

-- CreateIndex
CREATE INDEX "TrafficRecordGap_toAt_idx" ON "TrafficRecordGap"("toAt");
