import type { Metadata } from "next";
import { NotBuilt } from "@/components/shell/not-built";

export const metadata: Metadata = { title: "Customers" };

export default function CustomersPage() {
  return (
    <NotBuilt
      area="Customers"
      purpose="Find a customer, see the limits in effect for each endpoint and why, and its recent rejections."
    />
  );
}
