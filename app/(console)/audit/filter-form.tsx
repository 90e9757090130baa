"use client";

import { useRouter } from "next/navigation";
import type { FormEvent, ReactNode } from "react";

/**
 * A GET form whose URL keeps only the filters that are set, so a shared link reads
 * `/audit?customerId=acme` rather than a row of empty parameters. Without JavaScript it is a plain
 * GET form and still works.
 */
export function FilterForm({
  action,
  label,
  className,
  children,
}: {
  action: string;
  label: string;
  className?: string;
  children: ReactNode;
}) {
  const router = useRouter();
  function onSubmit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const params = new URLSearchParams();
    for (const [name, value] of new FormData(event.currentTarget)) {
      if (typeof value === "string" && value.trim() !== "") params.append(name, value.trim());
    }
    const query = params.toString();
    router.push(query === "" ? action : `${action}?${query}`);
  }
  return (
    <form method="get" action={action} aria-label={label} className={className} onSubmit={onSubmit}>
      {children}
    </form>
  );
}
