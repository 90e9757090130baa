import type { Metadata } from "next";
import Link from "next/link";
import { can } from "@/lib/control";
import { requirePrincipal } from "@/lib/server/current-principal";
import { TierCreateForm } from "./tier-create-form";

export const metadata: Metadata = { title: "New tier" };

export default async function NewTierPage() {
  const principal = await requirePrincipal("policy.read", { next: "/policies/tiers/new" });
  return (
    <>
      <header className="page-header">
        <p className="small">
          <Link href="/policies">← Policies</Link>
        </p>
        <h1>New tier</h1>
        <p>
          A tier is the account limit its customers start from. Gateways name it when they identify
          a customer; endpoint classes can give it per-endpoint limits afterwards.
        </p>
      </header>
      <section className="panel" aria-labelledby="create-heading">
        <h2 id="create-heading">The tier</h2>
        {can(principal.role, "tier.write") ? (
          <TierCreateForm />
        ) : (
          <p className="muted" data-testid="read-only">
            Only admins can create tiers (your role: {principal.role}).
          </p>
        )}
      </section>
    </>
  );
}
