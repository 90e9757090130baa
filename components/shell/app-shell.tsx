import Link from "next/link";
import type { ReactNode } from "react";
import { SignOutButton } from "@/components/auth/sign-out-button";
import { DATABASE_UNAVAILABLE_MESSAGE } from "@/lib/console/outage";
import type { Principal } from "@/lib/control";
import { type NavItem, NavLinks } from "./nav-links";

/** The areas of the console, in the order an operator reaches for them. */
export const NAV_ITEMS: readonly NavItem[] = [
  { href: "/", label: "Overview" },
  { href: "/policies", label: "Policies" },
  { href: "/customers", label: "Customers" },
  { href: "/overrides", label: "Overrides" },
  { href: "/change-requests", label: "Approvals" },
  { href: "/audit", label: "Audit log" },
  { href: "/audit/webhook", label: "Audit webhook" },
  { href: "/dry-run", label: "Dry-run" },
  { href: "/descriptor-rules", label: "Descriptor rules" },
  { href: "/descriptor-mappings", label: "Descriptor mappings" },
  { href: "/outbound-budgets", label: "Outbound budgets" },
  { href: "/status", label: "Status" },
];

/**
 * The sidebar and the page. `principal` is who is signed in (null on the public status page): the
 * shell shows who and with which role, so an operator knows what the console will let them do.
 * `isDatabaseUnreachable`: who is signed in cannot be known; a banner says why.
 */
export function AppShell({
  children,
  principal,
  isDatabaseUnreachable = false,
}: {
  children: ReactNode;
  principal: Principal | null;
  isDatabaseUnreachable?: boolean;
}) {
  return (
    <div className="shell">
      <aside className="sidebar">
        <Link href="/" className="brand">
          <span className="brand-mark" aria-hidden="true" />
          Limitplane
        </Link>
        <NavLinks items={NAV_ITEMS} />
        <div className="who" data-testid="who">
          {principal === null ? (
            <Link href="/sign-in">Sign in</Link>
          ) : (
            <>
              <span className="who-name">{principal.name}</span>{" "}
              <span className="badge badge-muted" data-testid="who-role">
                {principal.role}
              </span>
              {principal.kind === "operator" ? <SignOutButton /> : null}
            </>
          )}
        </div>
        <div className="nav-footer">
          v{process.env.LIMITPLANE_VERSION ?? "dev"} · {process.env.LIMITPLANE_COMMIT ?? "unknown"}
        </div>
      </aside>
      <main className="main">
        {isDatabaseUnreachable ? (
          <p className="notice notice-bad" role="alert" data-testid="database-unreachable">
            {DATABASE_UNAVAILABLE_MESSAGE} <Link href="/status">Status</Link>
          </p>
        ) : null}
        {children}
      </main>
    </div>
  );
}
