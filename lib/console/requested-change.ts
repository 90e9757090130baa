/**
 * The change request an edit form sends when its save was refused with APPROVAL_REQUIRED: the
 * same edit, named by kind (lib/control/change-request/change-request-record.ts ZRequestedChange),
 * with the version the form was opened at. Pure: the form is client code.
 */

const ROUTES: readonly {
  readonly pattern: RegExp;
  readonly kinds: Partial<Record<string, string>>;
}[] = [
  {
    pattern: /^\/api\/v1\/tiers\/([^/]+)$/,
    kinds: { PATCH: "tier.update", DELETE: "tier.delete" },
  },
  {
    pattern: /^\/api\/v1\/endpoint-classes\/([^/]+)$/,
    kinds: { PATCH: "endpoint-class.update", DELETE: "endpoint-class.delete" },
  },
  { pattern: /^\/api\/v1\/settings$/, kinds: { PATCH: "settings.update" } },
];

/** The change to request for `method saveUrl` with `body`, or null when it cannot be requested. */
export function requestedChangeOf(
  saveUrl: string,
  method: string,
  body: Readonly<Record<string, unknown>>,
  expectedVersion: number,
): Record<string, unknown> | null {
  for (const route of ROUTES) {
    const match = route.pattern.exec(saveUrl);
    const kind = route.kinds[method];
    if (match === null || kind === undefined) continue;
    const name = match[1];
    return {
      kind,
      ...(name === undefined ? {} : { name: decodeURIComponent(name) }),
      ...body,
      expectedVersion,
    };
  }
  return null;
}
