-- CreateTable
CREATE TABLE "AlertDelivery" (
    "id" BIGSERIAL NOT NULL,
    "alertKey" TEXT NOT NULL,
    "episode" INTEGER NOT NULL DEFAULT 1,
    "url" TEXT NOT NULL,
    "payload" JSONB NOT NULL,
    "status" TEXT NOT NULL DEFAULT 'pending',
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "lastError" TEXT,
    "nextAttemptAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "deliveredAt" TIMESTAMPTZ(3),
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "resolvedAt" TIMESTAMPTZ(3),

    CONSTRAINT "AlertDelivery_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "AlertDelivery_status_nextAttemptAt_idx" ON "AlertDelivery"("status", "nextAttemptAt");

-- CreateIndex
CREATE INDEX "AlertDelivery_resolvedAt_idx" ON "AlertDelivery"("resolvedAt");

-- CreateIndex
CREATE UNIQUE INDEX "AlertDelivery_alertKey_url_episode_key" ON "AlertDelivery"("alertKey", "url", "episode");
