-- CreateTable
CREATE TABLE "ApprovalSettings" (
    "id" INTEGER NOT NULL DEFAULT 1,
    "isEnabled" BOOLEAN NOT NULL DEFAULT false,
    "limitDecreasePercent" INTEGER NOT NULL DEFAULT 25,
    "isCeilingChangeGated" BOOLEAN NOT NULL DEFAULT true,
    "isDeletionGated" BOOLEAN NOT NULL DEFAULT true,
    "importChangedEntries" INTEGER NOT NULL DEFAULT 100,
    "requestLifetimeMs" INTEGER NOT NULL DEFAULT 259200000,
    "version" INTEGER NOT NULL DEFAULT 1,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "ApprovalSettings_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "ChangeRequest" (
    "id" TEXT NOT NULL,
    "status" TEXT NOT NULL DEFAULT 'pending',
    "action" TEXT NOT NULL,
    "entityType" TEXT NOT NULL,
    "entityId" TEXT NOT NULL,
    "change" JSONB NOT NULL,
    "diff" JSONB NOT NULL,
    "preview" JSONB,
    "backtest" JSONB,
    "gatedBy" JSONB NOT NULL,
    "reason" TEXT NOT NULL,
    "authorType" TEXT NOT NULL,
    "authorId" TEXT,
    "authorName" TEXT NOT NULL,
    "authorOperatorId" TEXT,
    "basePolicyVersion" INTEGER,
    "previewedAt" TIMESTAMPTZ(3) NOT NULL,
    "expiresAt" TIMESTAMPTZ(3) NOT NULL,
    "decidedAt" TIMESTAMPTZ(3),
    "deciderId" TEXT,
    "deciderName" TEXT,
    "decisionNote" TEXT,
    "requestAuditEntryId" BIGINT,
    "decisionAuditEntryId" BIGINT,
    "appliedAuditEntryId" BIGINT,
    "appliedPolicyVersion" INTEGER,
    "version" INTEGER NOT NULL DEFAULT 1,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "ChangeRequest_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "ChangeRequestEvent" (
    "id" BIGSERIAL NOT NULL,
    "changeRequestId" TEXT NOT NULL,
    "event" TEXT NOT NULL,
    "payload" JSONB NOT NULL,
    "at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "queuedAt" TIMESTAMPTZ(3),

    CONSTRAINT "ChangeRequestEvent_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "ChangeRequest_status_expiresAt_idx" ON "ChangeRequest"("status", "expiresAt");

-- CreateIndex
CREATE INDEX "ChangeRequest_createdAt_id_idx" ON "ChangeRequest"("createdAt" DESC, "id" DESC);

-- CreateIndex
CREATE INDEX "ChangeRequestEvent_queuedAt_id_idx" ON "ChangeRequestEvent"("queuedAt", "id");

-- CreateIndex
CREATE INDEX "ChangeRequestEvent_changeRequestId_idx" ON "ChangeRequestEvent"("changeRequestId");

-- AddForeignKey
ALTER TABLE "ChangeRequestEvent" ADD CONSTRAINT "ChangeRequestEvent_changeRequestId_fkey" FOREIGN KEY ("changeRequestId") REFERENCES "ChangeRequest"("id") ON DELETE RESTRICT ON UPDATE CASCADE;
