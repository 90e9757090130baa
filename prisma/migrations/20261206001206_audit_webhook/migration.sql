-- CreateTable
CREATE TABLE "AuditWebhookSettings" (
    "id" INTEGER NOT NULL DEFAULT 1,
    "url" TEXT,
    "signingSecret" TEXT NOT NULL,
    "version" INTEGER NOT NULL DEFAULT 1,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "AuditWebhookSettings_pkey" PRIMARY KEY ("id")
);
