"use server";

import type { Permission } from "@/lib/control";
import {
  isAppError,
  type PolicyChangePreview,
  type PreviewPolicyChangeOptions,
  type PreviewStructureChangeOptions,
  previewPolicyChange,
  previewStructureChange,
  type StructureChangePreview,
} from "@/lib/control";
import { controlDeps } from "@/lib/server/composition";
import { requirePrincipal } from "@/lib/server/current-principal";

export type PreviewResult =
  | { readonly ok: true; readonly preview: PolicyChangePreview }
  | {
      readonly ok: false;
      readonly message: string;
      readonly fieldErrors: readonly { readonly path: string; readonly message: string }[];
    };

const PERMISSION_BY_KIND: Record<PreviewPolicyChangeOptions["kind"], Permission> = {
  tier: "tier.write",
  "endpoint-class": "endpoint-class.write",
  settings: "settings.write",
};

/**
 * The preview of an edit, for the edit forms: what would change and whom it reaches. Writes
 * nothing. Needs the permission the edit itself needs, since only those who may save preview.
 */
export async function previewPolicyChangeAction(
  options: PreviewPolicyChangeOptions,
): Promise<PreviewResult> {
  // The argument arrives from the browser: anything unexpected needs the strictest permission,
  // and the service's own parsing refuses it.
  const kind =
    typeof options === "object" &&
    options !== null &&
    Object.hasOwn(PERMISSION_BY_KIND, options.kind)
      ? options.kind
      : "settings";
  await requirePrincipal(PERMISSION_BY_KIND[kind], { next: "/policies" });
  try {
    return { ok: true, preview: await previewPolicyChange(options, controlDeps()) };
  } catch (error: unknown) {
    if (!isAppError(error)) throw error;
    return { ok: false, message: error.message, fieldErrors: error.fieldErrors };
  }
}

export type StructurePreviewResult =
  | { readonly ok: true; readonly preview: StructureChangePreview }
  | Extract<PreviewResult, { ok: false }>;

const PERMISSION_BY_STRUCTURE_KIND: Record<PreviewStructureChangeOptions["kind"], Permission> = {
  "tier-create": "tier.write",
  "tier-delete": "tier.write",
  "endpoint-class-create": "endpoint-class.write",
  "endpoint-class-delete": "endpoint-class.write",
  guardrails: "settings.write",
};

/** The preview of creating or deleting a tier or endpoint class, or editing the guardrails. */
export async function previewStructureChangeAction(
  options: PreviewStructureChangeOptions,
): Promise<StructurePreviewResult> {
  const kind =
    typeof options === "object" &&
    options !== null &&
    Object.hasOwn(PERMISSION_BY_STRUCTURE_KIND, options.kind)
      ? options.kind
      : "guardrails";
  await requirePrincipal(PERMISSION_BY_STRUCTURE_KIND[kind], { next: "/policies" });
  try {
    return { ok: true, preview: await previewStructureChange(options, controlDeps()) };
  } catch (error: unknown) {
    if (!isAppError(error)) throw error;
    return { ok: false, message: error.message, fieldErrors: error.fieldErrors };
  }
}
