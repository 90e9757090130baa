/**
 * Roles and what each may do. One table, read by route handlers (the server refuses) and by pages
 * (what a role may not do is not offered).
 *
 * - viewer: reads everything.
 * - operator: also incident overrides, customer overrides, customers, dry-run candidates and
 *   outbound budgets, and raising an outbound budget for a while (as an incident override does).
 * - admin: everything, including tiers, endpoint classes, ceilings, settings, operators and tokens,
 *   and promoting a dry-run candidate (which rewrites a tier, an endpoint class or a ceiling: the
 *   rules only an admin may edit directly), and requesting or approving a change that needs a
 *   second person (lib/control/change-request).
 */
export const ROLES = ["viewer", "operator", "admin"] as const;
export type Role = (typeof ROLES)[number];

export const PERMISSIONS = {
  "policy.read": "viewer",
  "audit.read": "viewer",
  "metrics.read": "viewer",
  "customer.write": "operator",
  "override.write": "operator",
  "incident.write": "operator",
  "candidate.write": "operator",
  "outbound-budget.write": "operator",
  "outbound-budget.raise": "operator",
  "candidate.promote": "admin",
  "descriptor-rule.write": "admin",
  "tier.write": "admin",
  "endpoint-class.write": "admin",
  "settings.write": "admin",
  "policy.import": "admin",
  "change.request": "admin",
  "change.approve": "admin",
  "operator.manage": "admin",
  "token.manage": "admin",
} as const satisfies Record<string, Role>;

export type Permission = keyof typeof PERMISSIONS;

const RANK: Record<Role, number> = { viewer: 0, operator: 1, admin: 2 };

/** viewer 0, operator 1, admin 2: a role may do what every lower one may. */
export function rankOf(role: Role): number {
  return RANK[role];
}

export function can(role: Role, permission: Permission): boolean {
  return RANK[role] >= RANK[PERMISSIONS[permission]];
}

export function isRole(value: unknown): value is Role {
  return typeof value === "string" && (ROLES as readonly string[]).includes(value);
}
