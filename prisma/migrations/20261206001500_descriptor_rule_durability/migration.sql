-- AlterTable
ALTER TABLE "DescriptorRule" ADD COLUMN     "durability" TEXT;
