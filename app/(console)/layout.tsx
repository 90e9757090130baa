import type { ReactNode } from "react";
import { AppShell } from "@/components/shell/app-shell";

/**
 * Every console page sits in the shell. Each page checks its own permission
 * (`requirePrincipal`): a layout is not re-rendered on every navigation, so it cannot be the guard.
 */
export default function ConsoleLayout({ children }: { children: ReactNode }) {
  return <AppShell>{children}</AppShell>;
}
