-- AlterTable
ALTER TABLE "PolicySettings" ADD COLUMN "descriptorMappings" JSONB,
ADD COLUMN "descriptorMappingsVersion" INTEGER NOT NULL DEFAULT 1;
