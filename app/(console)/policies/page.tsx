import type { Metadata } from "next";
import { NotBuilt } from "@/components/shell/not-built";

export const metadata: Metadata = { title: "Policies" };

export default function PoliciesPage() {
  return (
    <NotBuilt
      area="Policies"
      purpose="Tiers, endpoint classes and ceilings: the limits every request is checked against."
    />
  );
}
