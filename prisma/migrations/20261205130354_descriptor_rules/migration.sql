-- CreateTable
CREATE TABLE "DescriptorRule" (
    "id" TEXT NOT NULL,
    "domain" TEXT NOT NULL,
    "descriptor" JSONB NOT NULL,
    "limit" JSONB NOT NULL,
    "mode" TEXT NOT NULL,
    "onStoreFailure" TEXT NOT NULL,
    "name" TEXT,
    "replaces" JSONB NOT NULL,
    "wildcardCounter" TEXT NOT NULL,
    "detailedMetric" BOOLEAN NOT NULL,
    "version" INTEGER NOT NULL DEFAULT 1,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "DescriptorRule_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "DescriptorRule_domain_idx" ON "DescriptorRule"("domain");
