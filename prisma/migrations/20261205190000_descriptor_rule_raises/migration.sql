-- AlterTable
ALTER TABLE "DescriptorRule" ADD COLUMN     "raises" JSONB NOT NULL DEFAULT '[]';
