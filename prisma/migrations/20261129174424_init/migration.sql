-- CreateSchema
CREATE SCHEMA IF NOT EXISTS "public";

-- CreateTable
CREATE TABLE "AuditEntry" (
    "id" BIGSERIAL NOT NULL,
    "at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "actorType" TEXT NOT NULL,
    "actorId" TEXT,
    "actorName" TEXT NOT NULL,
    "action" TEXT NOT NULL,
    "entityType" TEXT NOT NULL,
    "entityId" TEXT NOT NULL,
    "customerId" TEXT,
    "before" JSONB,
    "after" JSONB,
    "reason" TEXT NOT NULL,
    "requestId" TEXT,
    "policyVersion" INTEGER,

    CONSTRAINT "AuditEntry_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "AuditEntry_at_id_idx" ON "AuditEntry"("at" DESC, "id" DESC);

-- CreateIndex
CREATE INDEX "AuditEntry_actorId_at_id_idx" ON "AuditEntry"("actorId", "at" DESC, "id" DESC);

-- CreateIndex
CREATE INDEX "AuditEntry_entityType_entityId_at_id_idx" ON "AuditEntry"("entityType", "entityId", "at" DESC, "id" DESC);

-- CreateIndex
CREATE INDEX "AuditEntry_customerId_at_id_idx" ON "AuditEntry"("customerId", "at" DESC, "id" DESC);

-- CreateIndex
CREATE INDEX "AuditEntry_action_at_id_idx" ON "AuditEntry"("action", "at" DESC, "id" DESC);

-- The audit log is append-only in the database itself: no UPDATE, DELETE or TRUNCATE, whoever
-- tries. (Written by hand: Prisma cannot describe triggers, so the drift check ignores them.)
CREATE FUNCTION "audit_entry_is_append_only"() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'AuditEntry is append-only: % is not allowed', TG_OP
    USING ERRCODE = 'insufficient_privilege';
END;
$$;

CREATE TRIGGER "AuditEntry_no_update_delete"
  BEFORE UPDATE OR DELETE ON "AuditEntry"
  FOR EACH ROW EXECUTE FUNCTION "audit_entry_is_append_only"();

CREATE TRIGGER "AuditEntry_no_truncate"
  BEFORE TRUNCATE ON "AuditEntry"
  FOR EACH STATEMENT EXECUTE FUNCTION "audit_entry_is_append_only"();
