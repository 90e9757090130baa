import type { Metadata } from "next";
import { NotBuilt } from "@/components/shell/not-built";

export const metadata: Metadata = { title: "Overrides" };

export default function OverridesPage() {
  return (
    <NotBuilt
      area="Overrides"
      purpose="Per-customer overrides and time-limited incident overrides, with their owners and expiry."
    />
  );
}
