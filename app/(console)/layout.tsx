import type { ReactNode } from "react";
import { AppShell } from "@/components/shell/app-shell";
import { currentPrincipal } from "@/lib/control/auth/current-principal";

/**
 * Every console page sits in the shell, which shows who is signed in. Each page checks its own
 * permission (`requirePrincipal`): a layout is not re-rendered on every navigation, so it cannot be
 * the guard.
 */
export default async function ConsoleLayout({ children }: { children: ReactNode }) {
  return <AppShell principal={await currentPrincipal()}>{children}</AppShell>;
}
