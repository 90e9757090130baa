import Link from "next/link";
import type { ReactNode } from "react";
import { type NavItem, NavLinks } from "./nav-links";

/** The areas of the console, in the order an operator reaches for them. */
export const NAV_ITEMS: readonly NavItem[] = [
  { href: "/", label: "Overview" },
  { href: "/policies", label: "Policies" },
  { href: "/customers", label: "Customers" },
  { href: "/overrides", label: "Overrides" },
  { href: "/audit", label: "Audit log" },
  { href: "/dry-run", label: "Dry-run" },
  { href: "/status", label: "Status" },
];

export function AppShell({ children }: { children: ReactNode }) {
  return (
    <div className="shell">
      <aside className="sidebar">
        <Link href="/" className="brand">
          <span className="brand-mark" aria-hidden="true" />
          Limitplane
        </Link>
        <NavLinks items={NAV_ITEMS} />
        <div className="nav-footer">
          v{process.env.LIMITPLANE_VERSION ?? "dev"} · {process.env.LIMITPLANE_COMMIT ?? "unknown"}
        </div>
      </aside>
      <main className="main">{children}</main>
    </div>
  );
}
