import type { Metadata } from "next";
import Link from "next/link";
import { can } from "@/lib/control";
import { requirePrincipal } from "@/lib/server/current-principal";
import { EndpointClassCreateForm } from "./endpoint-class-create-form";

export const metadata: Metadata = { title: "New endpoint class" };

export default async function NewEndpointClassPage() {
  const principal = await requirePrincipal("policy.read", {
    next: "/policies/endpoint-classes/new",
  });
  return (
    <>
      <header className="page-header">
        <p className="small">
          <Link href="/policies">← Policies</Link>
        </p>
        <h1>New endpoint class</h1>
        <p>
          A group of endpoints limited together: the requests it matches, and what each costs. Give
          it per-tier limits on its page once it exists.
        </p>
      </header>
      <section className="panel" aria-labelledby="create-heading">
        <h2 id="create-heading">The endpoint class</h2>
        {can(principal.role, "endpoint-class.write") ? (
          <EndpointClassCreateForm />
        ) : (
          <p className="muted" data-testid="read-only">
            Only admins can create endpoint classes (your role: {principal.role}).
          </p>
        )}
      </section>
    </>
  );
}
