/**
 * The closed set of audit actions and entity types. An action is `<entity>.<verb>`; the console
 * filters by it and the API documents it, so adding one is a deliberate change here.
 */

export const AUDIT_ACTIONS = [
  "tier.create",
  "tier.update",
  "tier.delete",
  "endpoint-class.create",
  "endpoint-class.update",
  "endpoint-class.delete",
  "settings.update",
  "customer.create",
  "customer.update",
  "customer.delete",
  "override.create",
  "override.update",
  "override.delete",
  "incident.raise",
  "incident.extend",
  "incident.revert",
  "incident.expire",
  "candidate.create",
  "candidate.update",
  "candidate.promote",
  "candidate.discard",
  "staged-change.start",
  "staged-change.pause",
  "staged-change.resume",
  "staged-change.advance",
  "staged-change.hold",
  "staged-change.complete",
  "staged-change.abort",
  "staged-change.revert",
  "policy.import",
  "descriptor-rule.create",
  "descriptor-rule.update",
  "descriptor-rule.delete",
  "descriptor-rule.import",
  "descriptor-mapping.update",
  "descriptor-rule.raise",
  "descriptor-rule.revert-raise",
  "operator.create",
  "operator.update",
  "operator.disable",
  "operator.enable",
  "operator.password-reset",
  "operator.sso-create",
  "operator.sso-update",
  "operator.sso-link",
  "operator.break-glass-sign-in",
  "token.create",
  "token.revoke",
  "approval-settings.update",
  "staged-guard-settings.update",
  "change-request.create",
  "change-request.refresh",
  "change-request.approve",
  "change-request.reject",
  "change-request.withdraw",
  "change-request.expire",
] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];

/** What `entityType` names; `entityId` is the entity's key (a name, an id, or an override's scope). */
export const AUDIT_ENTITY_TYPES = [
  "tier",
  "endpoint-class",
  "settings",
  "customer",
  "customer-override",
  "incident",
  "candidate",
  "staged-change",
  "descriptor-rule",
  "descriptor-mapping",
  "policy",
  "operator",
  "token",
  "approval-settings",
  "staged-guard-settings",
  "change-request",
] as const;
export type AuditEntityType = (typeof AUDIT_ENTITY_TYPES)[number];

export function isAuditAction(value: string): value is AuditAction {
  return (AUDIT_ACTIONS as readonly string[]).includes(value);
}
