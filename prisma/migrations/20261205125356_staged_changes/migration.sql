-- AlterTable
ALTER TABLE "DryRunCandidate" ADD COLUMN     "sliceBasisPoints" INTEGER;

-- CreateTable
CREATE TABLE "StagedChange" (
    "id" TEXT NOT NULL,
    "target" TEXT NOT NULL,
    "limit" JSONB NOT NULL,
    "previousLimit" JSONB,
    "origin" TEXT NOT NULL,
    "steps" JSONB NOT NULL,
    "stepIndex" INTEGER NOT NULL DEFAULT 0,
    "state" TEXT NOT NULL,
    "stepStartedAt" TIMESTAMPTZ(3) NOT NULL,
    "pausedAt" TIMESTAMPTZ(3),
    "guard" JSONB NOT NULL,
    "breachedWindows" INTEGER NOT NULL DEFAULT 0,
    "lastWindowEndMs" BIGINT,
    "guardState" JSONB,
    "holdNotifiedAt" TIMESTAMPTZ(3),
    "endReason" TEXT,
    "endFigures" JSONB,
    "endedAt" TIMESTAMPTZ(3),
    "createdBy" TEXT NOT NULL,
    "version" INTEGER NOT NULL DEFAULT 1,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "StagedChange_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "StagedChange_state_idx" ON "StagedChange"("state");
