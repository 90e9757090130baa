import type { ReactNode } from "react";
import { AppShell } from "@/components/shell/app-shell";
import { currentPrincipalIfReachable } from "@/lib/server/current-principal";

/**
 * Every console page sits in the shell, which shows who is signed in. Each page checks its own
 * permission (`requirePrincipal`): a layout is not re-rendered on every navigation, so it cannot be
 * the guard. With the database down the shell still renders (signed out, with a banner), so the
 * status page works and every other page says what is wrong.
 */
export default async function ConsoleLayout({ children }: { children: ReactNode }) {
  const { principal, isDatabaseUnreachable } = await currentPrincipalIfReachable();
  return (
    <AppShell principal={principal} isDatabaseUnreachable={isDatabaseUnreachable}>
      {children}
    </AppShell>
  );
}
