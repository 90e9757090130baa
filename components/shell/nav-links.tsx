"use client";

import Link from "next/link";
import { usePathname } from "next/navigation";

export interface NavItem {
  href: string;
  label: string;
}

/**
 * The item the page at `pathname` belongs to: the one whose href is the longest prefix of it, so
 * /audit/webhook marks "Audit webhook" and not also "Audit log". Null when none matches.
 */
export function currentNavHref(items: readonly NavItem[], pathname: string): string | null {
  let best: string | null = null;
  for (const { href } of items) {
    const isMatch =
      href === "/" ? pathname === "/" : pathname === href || pathname.startsWith(`${href}/`);
    if (isMatch && (best === null || href.length > best.length)) best = href;
  }
  return best;
}

/** The sidebar's links; a client leaf only so the current page can be marked. */
export function NavLinks({ items }: { items: readonly NavItem[] }) {
  const current = currentNavHref(items, usePathname());
  return (
    <nav className="nav" aria-label="Main">
      {items.map((item) => (
        <Link
          key={item.href}
          href={item.href}
          aria-current={item.href === current ? "page" : undefined}
        >
          {item.label}
        </Link>
      ))}
    </nav>
  );
}
