import type { Metadata } from "next";
import { NotBuilt } from "@/components/shell/not-built";

export const metadata: Metadata = { title: "Audit log" };

export default function AuditlogPage() {
  return (
    <NotBuilt
      area="Audit log"
      purpose="Who changed which limit, when, from what to what, and why."
    />
  );
}
