-- CreateTable
CREATE TABLE "OutboundBudget" (
    "name" TEXT NOT NULL,
    "displayName" TEXT,
    "limit" JSONB,
    "concurrency" JSONB,
    "maxWaitMs" INTEGER NOT NULL,
    "keyBy" TEXT NOT NULL,
    "version" INTEGER NOT NULL DEFAULT 1,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "OutboundBudget_pkey" PRIMARY KEY ("name")
);
