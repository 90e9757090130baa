"use client";

import { type BuildResult, PolicyEditForm } from "./policy-edit-form";

/**
 * Deleting a tier or an endpoint class: the preview names everything that still refers to it (and
 * the deletion is refused while anything does) or the limits that go with it; a reason is
 * required, and the deletion is audited like every change.
 */
export function DeleteEntityForm({
  kind,
  name,
  version,
}: {
  kind: "tier" | "endpoint-class";
  name: string;
  version: number;
}) {
  const collection = kind === "tier" ? "tiers" : "endpoint-classes";
  const build = (): BuildResult => ({
    ok: true,
    preview: { kind: kind === "tier" ? "tier-delete" : "endpoint-class-delete", name },
    body: {},
  });
  return (
    <PolicyEditForm
      subject={`${kind === "tier" ? "tier" : "endpoint class"} "${name}"`}
      version={version}
      saveUrl={`/api/v1/${collection}/${encodeURIComponent(name)}`}
      method="DELETE"
      afterSaveHref="/policies"
      saveLabel={`Delete ${name}`}
      previewLabel="Preview deletion"
      reasonLabel="Reason for deleting (required)"
      idPrefix="delete"
      build={build}
      renderFields={() => null}
    />
  );
}
