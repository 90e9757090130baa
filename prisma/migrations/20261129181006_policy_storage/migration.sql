-- CreateExtension
CREATE EXTENSION IF NOT EXISTS "pg_trgm";

-- CreateTable
CREATE TABLE "PolicySettings" (
    "id" INTEGER NOT NULL DEFAULT 1,
    "defaultTier" TEXT NOT NULL,
    "defaultEndpointClass" TEXT NOT NULL,
    "ceilings" JSONB NOT NULL,
    "guardrails" JSONB NOT NULL,
    "version" INTEGER NOT NULL DEFAULT 1,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "PolicySettings_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "Tier" (
    "name" TEXT NOT NULL,
    "displayName" TEXT,
    "limit" JSONB NOT NULL,
    "version" INTEGER NOT NULL DEFAULT 1,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "Tier_pkey" PRIMARY KEY ("name")
);

-- CreateTable
CREATE TABLE "EndpointClass" (
    "name" TEXT NOT NULL,
    "displayName" TEXT,
    "match" JSONB NOT NULL,
    "cost" INTEGER NOT NULL,
    "limits" JSONB NOT NULL,
    "anonymousLimit" JSONB,
    "ceiling" JSONB,
    "keyBy" TEXT NOT NULL,
    "version" INTEGER NOT NULL DEFAULT 1,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "EndpointClass_pkey" PRIMARY KEY ("name")
);

-- CreateTable
CREATE TABLE "Customer" (
    "id" TEXT NOT NULL,
    "displayName" TEXT NOT NULL,
    "tier" TEXT NOT NULL,
    "version" INTEGER NOT NULL DEFAULT 1,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "Customer_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "CustomerOverride" (
    "scope" TEXT NOT NULL,
    "customerId" TEXT NOT NULL,
    "endpointClass" TEXT,
    "limit" JSONB NOT NULL,
    "version" INTEGER NOT NULL DEFAULT 1,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "CustomerOverride_pkey" PRIMARY KEY ("scope")
);

-- CreateTable
CREATE TABLE "IncidentOverride" (
    "id" TEXT NOT NULL,
    "customerId" TEXT NOT NULL,
    "endpointClass" TEXT,
    "factor" DOUBLE PRECISION,
    "limit" JSONB,
    "startsAt" TIMESTAMPTZ(3) NOT NULL,
    "expiresAt" TIMESTAMPTZ(3) NOT NULL,
    "owner" TEXT NOT NULL,
    "reason" TEXT NOT NULL,
    "ticketUrl" TEXT,
    "createdBy" TEXT NOT NULL,
    "revokedAt" TIMESTAMPTZ(3),
    "revokedBy" TEXT,
    "expiryRecordedAt" TIMESTAMPTZ(3),
    "version" INTEGER NOT NULL DEFAULT 1,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "IncidentOverride_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "DryRunCandidate" (
    "id" TEXT NOT NULL,
    "target" TEXT NOT NULL,
    "limit" JSONB NOT NULL,
    "createdBy" TEXT NOT NULL,
    "version" INTEGER NOT NULL DEFAULT 1,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "DryRunCandidate_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "PolicyVersion" (
    "version" INTEGER NOT NULL,
    "checksum" TEXT NOT NULL,
    "policyChecksum" TEXT NOT NULL,
    "snapshot" JSONB NOT NULL,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "auditEntryId" BIGINT,

    CONSTRAINT "PolicyVersion_pkey" PRIMARY KEY ("version")
);

-- CreateTable
CREATE TABLE "OutboxEvent" (
    "id" BIGSERIAL NOT NULL,
    "topic" TEXT NOT NULL,
    "payload" JSONB NOT NULL,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "publishedAt" TIMESTAMPTZ(3),
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "lastError" TEXT,
    "nextAttemptAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "OutboxEvent_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "Customer_tier_idx" ON "Customer"("tier");

-- CreateIndex
CREATE INDEX "Customer_id_trgm_idx" ON "Customer" USING GIN ("id" gin_trgm_ops);

-- CreateIndex
CREATE INDEX "Customer_displayName_trgm_idx" ON "Customer" USING GIN ("displayName" gin_trgm_ops);

-- CreateIndex
CREATE INDEX "CustomerOverride_customerId_idx" ON "CustomerOverride"("customerId");

-- CreateIndex
CREATE INDEX "CustomerOverride_endpointClass_idx" ON "CustomerOverride"("endpointClass");

-- CreateIndex
CREATE INDEX "IncidentOverride_customerId_expiresAt_idx" ON "IncidentOverride"("customerId", "expiresAt");

-- CreateIndex
CREATE INDEX "IncidentOverride_expiresAt_idx" ON "IncidentOverride"("expiresAt");

-- CreateIndex
CREATE INDEX "IncidentOverride_expiryRecordedAt_revokedAt_expiresAt_idx" ON "IncidentOverride"("expiryRecordedAt", "revokedAt", "expiresAt");

-- CreateIndex
CREATE INDEX "DryRunCandidate_target_idx" ON "DryRunCandidate"("target");

-- CreateIndex
CREATE INDEX "OutboxEvent_topic_publishedAt_id_idx" ON "OutboxEvent"("topic", "publishedAt", "id");

-- AddForeignKey
ALTER TABLE "Customer" ADD CONSTRAINT "Customer_tier_fkey" FOREIGN KEY ("tier") REFERENCES "Tier"("name") ON DELETE RESTRICT ON UPDATE RESTRICT;

-- AddForeignKey
ALTER TABLE "CustomerOverride" ADD CONSTRAINT "CustomerOverride_customerId_fkey" FOREIGN KEY ("customerId") REFERENCES "Customer"("id") ON DELETE RESTRICT ON UPDATE RESTRICT;

-- AddForeignKey
ALTER TABLE "CustomerOverride" ADD CONSTRAINT "CustomerOverride_endpointClass_fkey" FOREIGN KEY ("endpointClass") REFERENCES "EndpointClass"("name") ON DELETE RESTRICT ON UPDATE RESTRICT;
