-- CreateIndex
CREATE INDEX "AuditEntry_actorType_at_id_idx" ON "AuditEntry"("actorType", "at" DESC, "id" DESC);

-- CreateIndex
CREATE INDEX "AuditEntry_entityType_at_id_idx" ON "AuditEntry"("entityType", "at" DESC, "id" DESC);
