import { NotBuilt } from "@/components/shell/not-built";
import { requirePrincipal } from "@/lib/control/auth/current-principal";

export default async function OverviewPage() {
  await requirePrincipal("metrics.read", { next: "/" });
  return (
    <NotBuilt
      area="Overview"
      purpose="Rejection rates per scope, the enforcer fleet and its policy version, and alerts."
    />
  );
}
