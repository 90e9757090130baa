-- CreateTable
CREATE TABLE "StagedGuardSettings" (
    "id" INTEGER NOT NULL DEFAULT 1,
    "marginPercent" DOUBLE PRECISION NOT NULL DEFAULT 5,
    "minRequests" INTEGER NOT NULL DEFAULT 100,
    "windowMs" INTEGER NOT NULL DEFAULT 60000,
    "consecutiveWindows" INTEGER NOT NULL DEFAULT 3,
    "version" INTEGER NOT NULL DEFAULT 1,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "StagedGuardSettings_pkey" PRIMARY KEY ("id")
);
