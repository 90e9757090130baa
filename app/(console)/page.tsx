import { NotBuilt } from "@/components/shell/not-built";

export default function OverviewPage() {
  return (
    <NotBuilt
      area="Overview"
      purpose="Rejection rates per scope, the enforcer fleet and its policy version, and alerts."
    />
  );
}
