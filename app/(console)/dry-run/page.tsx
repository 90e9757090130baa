import type { Metadata } from "next";
import { NotBuilt } from "@/components/shell/not-built";

export const metadata: Metadata = { title: "Dry-run" };

export default function DryrunPage() {
  return (
    <NotBuilt
      area="Dry-run"
      purpose="Preview a stricter policy against real traffic before it rejects anything."
    />
  );
}
