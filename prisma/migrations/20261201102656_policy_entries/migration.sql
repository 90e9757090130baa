-- AlterTable
ALTER TABLE "PolicyVersion" ADD COLUMN     "baseChecksum" TEXT,
ADD COLUMN     "changes" INTEGER,
ADD COLUMN     "delta" TEXT,
ADD COLUMN     "deltaBytes" INTEGER,
ADD COLUMN     "entries" INTEGER,
ALTER COLUMN "policyChecksum" DROP NOT NULL,
ALTER COLUMN "snapshot" DROP NOT NULL;

-- CreateTable
CREATE TABLE "PolicyEntry" (
    "key" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "customerId" TEXT,
    "value" TEXT NOT NULL,
    "digest" TEXT NOT NULL,
    "expiresAt" TIMESTAMPTZ(3),
    "version" INTEGER NOT NULL,

    CONSTRAINT "PolicyEntry_pkey" PRIMARY KEY ("key")
);

-- CreateIndex
CREATE INDEX "PolicyEntry_kind_idx" ON "PolicyEntry"("kind");

-- CreateIndex
CREATE INDEX "PolicyEntry_customerId_idx" ON "PolicyEntry"("customerId");

-- CreateIndex
CREATE INDEX "PolicyEntry_expiresAt_idx" ON "PolicyEntry"("expiresAt");
